//! Binding tensors by name: each looked up through
//! `crate::tensors::TensorDir`, checked against the shape the model needs
//! and a type tern reads, every problem collected (so a report names all of
//! them at once).

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use super::tensor_ref::TensorRef;
use crate::backend::quant::{self, GgmlType};
use crate::error::{Error, Result};
use crate::tensors::{Located, TensorDir};

/// Looks tensors up, checks them against the config and collects every
/// problem (so a report names all of them at once). With `read` off it only
/// checks: no tensor's bytes are touched.
pub(crate) struct Binder<'d, D: ?Sized> {
    dir: &'d D,
    arch: &'static str,
    read: bool,
    problems: RefCell<Vec<Error>>,
    used: RefCell<BTreeSet<String>>,
}

fn placeholder(name: String) -> TensorRef {
    TensorRef { name, ty: GgmlType::F32, buf: 0, start: 0, len: 0, n_cols: 0, n_rows: 0, scales: 0..0, rows8: 0..0 }
}

impl<'d, D: TensorDir + ?Sized> Binder<'d, D> {
    /// A binder over `dir` for `arch` (named in errors); with `read` off
    /// it only checks.
    pub(crate) fn new(dir: &'d D, arch: &'static str, read: bool) -> Self {
        Binder { dir, arch, read, problems: RefCell::default(), used: RefCell::default() }
    }

    /// Count `key` as used without binding it (a tied head).
    pub(crate) fn mark_used(&self, key: &str) {
        self.used.borrow_mut().insert(self.dir.naming().name(key));
    }

    /// Every problem found, in one error (with `strict`, also each tensor
    /// nothing bound); Ok if none.
    pub(crate) fn finish(self, strict: bool) -> Result<()> {
        if strict {
            for name in self.unused() {
                self.problem(Error::UnexpectedTensor { name });
            }
        }
        let mut problems = self.problems.into_inner();
        match problems.len() {
            0 => Ok(()),
            1 => Err(problems.remove(0)),
            _ => Err(Error::Tensors { problems }),
        }
    }

    fn problem(&self, e: Error) {
        self.problems.borrow_mut().push(e);
    }

    fn find(&self, key: &str) -> Option<(String, Located<'_>)> {
        let name = self.dir.naming().name(key);
        self.used.borrow_mut().insert(name.clone());
        match self.dir.get(&name) {
            Some(t) => Some((name, t)),
            None => {
                self.problem(Error::MissingTensor { name });
                None
            }
        }
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.dir.get(&self.dir.naming().name(key)).is_some()
    }

    /// A matrix of exactly `[n_cols, n_rows]` whose type has a kernel.
    pub(crate) fn matrix(&self, key: &str, n_cols: usize, n_rows: usize) -> TensorRef {
        self.shaped(key, &[n_cols as u64, n_rows as u64])
    }

    /// `n` matrices of `[n_cols, n_rows]` stacked (`[n_cols, n_rows, n]`,
    /// GGUF's `ffn_*_exps`), as one matrix of `n · n_rows` rows.
    pub(crate) fn stacked(&self, key: &str, n_cols: usize, n_rows: usize, n: usize) -> TensorRef {
        self.shaped(key, &[n_cols as u64, n_rows as u64, n as u64])
    }

    /// A matrix of exactly `dims` whose type has a kernel, its rows all
    /// but the first dimension.
    fn shaped(&self, key: &str, dims: &[u64]) -> TensorRef {
        let Some((name, t)) = self.find(key) else { return placeholder(key.into()) };
        let (n_cols, n_rows) = (dims[0] as usize, dims[1..].iter().product::<u64>() as usize);
        let rows = t.dims.iter().skip(1).product::<u64>();
        // a matrix may be stored as [n_cols] when it has one row
        let bad = match dims.len() {
            2 => t.dims.len() > 2 || t.dims[0] != dims[0] || rows != dims[1],
            _ => t.dims != dims,
        };
        if bad {
            self.problem(Error::TensorShape {
                tensor: name.clone(),
                detail: format!("dims {:?}, expected {dims:?}", t.dims),
            });
        } else if !quant::is_supported(t.ty) {
            self.problem(Error::UnsupportedTensorType {
                arch: self.arch.to_string(),
                tensor: name.clone(),
                type_name: t.ty.name(),
            });
        }
        TensorRef {
            name,
            ty: t.ty,
            buf: t.buf,
            start: t.start,
            len: t.data.len(),
            n_cols,
            n_rows,
            scales: 0..0,
            rows8: 0..0,
        }
    }

    /// A vector of `n` values, converted to f32 (when reading).
    pub(crate) fn vector(&self, key: &str, n: usize) -> Vec<f32> {
        self.read_f32(key, &[n as u64])
    }

    /// A table of `n_rows` rows of `n_cols`, converted to f32 (when reading).
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // encoders need std
    pub(crate) fn vector_of(&self, key: &str, n_cols: usize, n_rows: usize) -> Vec<f32> {
        self.read_f32(key, &[n_cols as u64, n_rows as u64])
    }

    /// A vector of `n` values stored as `[n]` or as a one-row matrix
    /// `[n, 1]` (transformers' `Linear(n, 1)`).
    pub(crate) fn vector_or_row(&self, key: &str, n: usize) -> Vec<f32> {
        let row = self.dir.get(&self.dir.naming().name(key)).is_some_and(|t| t.dims.len() == 2);
        let dims = [n as u64, 1];
        self.read_f32(key, if row { &dims } else { &dims[..1] })
    }

    /// A float tensor of exactly `dims`, converted to f32 (when reading).
    fn read_f32(&self, key: &str, dims: &[u64]) -> Vec<f32> {
        let Some((name, t)) = self.find(key) else { return Vec::new() };
        if t.dims != dims {
            self.problem(Error::TensorShape { tensor: name, detail: format!("dims {:?}, expected {dims:?}", t.dims) });
            return Vec::new();
        }
        let n = dims.iter().product::<u64>() as usize;
        if !matches!(t.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
            self.problem(Error::UnsupportedTensorType {
                arch: self.arch.to_string(),
                tensor: name,
                type_name: t.ty.name(),
            });
            return Vec::new();
        }
        if !self.read {
            return Vec::new();
        }
        let mut v = vec![0.0f32; n];
        if let Err(e) = quant::dequantize_row(t.ty, t.data, &mut v) {
            self.problem(e);
        }
        v
    }

    /// A norm's weights: `vector`, plus 1 where the file stores w for a
    /// norm that scales by 1 + w (`Expect::norm_plus_one`).
    pub(crate) fn norm(&self, key: &str, n: usize, plus_one: bool) -> Vec<f32> {
        let mut v = self.vector(key, n);
        if plus_one {
            v.iter_mut().for_each(|w| *w += 1.0);
        }
        v
    }

    pub(crate) fn opt_vector(&self, key: &str, n: usize) -> Option<Vec<f32>> {
        self.has(key).then(|| self.vector(key, n))
    }

    /// Every tensor of the directory that binding did not use.
    fn unused(&self) -> Vec<String> {
        let used = self.used.borrow();
        let naming = self.dir.naming();
        self.dir.names().into_iter().filter(|n| !used.contains(*n) && !naming.ignorable(n)).map(String::from).collect()
    }
}
