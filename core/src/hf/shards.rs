//! A checkpoint's safetensors files: the shard index
//! (`model.safetensors.index.json`) and each shard's header, checked
//! against each other before any tensor is read. Tensor data stay in the
//! caller's buffers (memory maps natively, per-shard buffers in wasm).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use safetensors::tensor::{Dtype, SafeTensors};

use crate::backend::quant::GgmlType;
use crate::error::{Error, Result};
use crate::tensors::{HfLayout, Located, Naming, TensorDir};

/// The index file of a sharded checkpoint.
pub const INDEX: &str = "model.safetensors.index.json";
/// The one file of an unsharded checkpoint.
pub(crate) const SINGLE: &str = "model.safetensors";

/// `model.safetensors.index.json`: which shard holds each tensor.
#[derive(Debug, Clone)]
pub struct Index {
    /// Tensor name → shard file.
    pub weight_map: BTreeMap<String, String>,
}

impl Index {
    /// Parse and check an index file.
    pub fn parse(bytes: &[u8]) -> Result<Index> {
        let bad = |field: &str, detail: String| Error::ModelFile { file: INDEX.into(), field: field.into(), detail };
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let map = v
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| bad("weight_map", "missing or not an object".into()))?;
        let mut weight_map = BTreeMap::new();
        for (name, file) in map {
            let file = file.as_str().ok_or_else(|| bad("weight_map", format!("{name}: {file} is not a file name")))?;
            // a plain file name in the same directory, never a path
            let plain = file.ends_with(".safetensors") && !file.contains(['/', '\\']) && !file.starts_with('.');
            if !plain {
                return Err(bad(
                    "weight_map",
                    format!("{name}: {file:?} is not a .safetensors file of this directory"),
                ));
            }
            weight_map.insert(name.clone(), file.to_string());
        }
        if weight_map.is_empty() {
            return Err(bad("weight_map", "empty".into()));
        }
        Ok(Index { weight_map })
    }

    /// The shard files, each once, in name order.
    pub fn files(&self) -> Vec<&str> {
        let set: BTreeSet<&str> = self.weight_map.values().map(String::as_str).collect();
        set.into_iter().collect()
    }
}

#[derive(Debug, Clone)]
struct Entry {
    buf: usize,
    start: usize,
    len: usize,
    ty: Option<GgmlType>,
    dtype: Dtype,
    /// ggml order (the safetensors shape reversed).
    dims: Vec<u64>,
}

/// Every tensor of the checkpoint, located in its shard.
pub struct Shards<'a> {
    bufs: Vec<&'a [u8]>,
    tensors: BTreeMap<String, Entry>,
    naming: Naming,
}

fn ggml_type(d: Dtype) -> Option<GgmlType> {
    match d {
        Dtype::F32 => Some(GgmlType::F32),
        Dtype::F16 => Some(GgmlType::F16),
        Dtype::BF16 => Some(GgmlType::BF16),
        _ => None,
    }
}

impl<'a> Shards<'a> {
    /// Read the headers of `shards` (file name, bytes) and check them
    /// against the index (if any) and the config's dtype: every tensor in
    /// exactly one shard, the one the index names; no shard the index does
    /// not name; dtypes tern reads. A header that does not parse is an
    /// error; the other problems are returned, to be reported with the
    /// binding's.
    pub fn read(
        shards: &[(&str, &'a [u8])],
        index: Option<&Index>,
        dtype: Option<GgmlType>,
    ) -> Result<(Shards<'a>, Vec<Error>)> {
        let mut problems = Vec::new();
        let mut tensors: BTreeMap<String, Entry> = BTreeMap::new();
        let mut where_: BTreeMap<String, &str> = BTreeMap::new();
        // tensors of a dtype tern does not read: problems unless the
        // forward pass never uses them (BERT's integer position_ids)
        let mut unreadable = Vec::new();
        for (buf, &(file, bytes)) in shards.iter().enumerate() {
            if let Some(ix) = index {
                if !ix.weight_map.values().any(|f| f == file) {
                    problems.push(Error::ModelFile {
                        file: file.into(),
                        field: "(file)".into(),
                        detail: format!("a shard {INDEX} does not name"),
                    });
                }
            }
            let (n, meta) = SafeTensors::read_metadata(bytes).map_err(|e| Error::ModelFile {
                file: file.into(),
                field: "header".into(),
                detail: e.to_string(),
            })?;
            let base = 8 + n;
            for (name, info) in meta.tensors() {
                let (s, e) = info.data_offsets;
                let entry = Entry {
                    buf,
                    start: base + s,
                    len: e - s,
                    ty: ggml_type(info.dtype),
                    dtype: info.dtype,
                    dims: info.shape.iter().rev().map(|&d| d as u64).collect(),
                };
                if entry.dims.is_empty() {
                    problems.push(Error::TensorShape { tensor: name.clone(), detail: "a scalar".into() });
                }
                match entry.ty {
                    None => unreadable.push(Error::ModelFile {
                        file: file.into(),
                        field: name.clone(),
                        detail: format!("dtype {:?} (tern reads F32, F16 and BF16)", info.dtype),
                    }),
                    Some(t) if dtype.is_some_and(|d| d != t && t != GgmlType::F32) => problems.push(Error::ModelFile {
                        file: file.into(),
                        field: name.clone(),
                        detail: format!(
                            "dtype {:?}, but config.json says {}",
                            info.dtype,
                            dtype.map_or("", |d| d.name())
                        ),
                    }),
                    _ => {}
                }
                if let Some(ix) = index {
                    match ix.weight_map.get(&name) {
                        Some(f) if f == file => {}
                        Some(f) => problems.push(Error::ModelFile {
                            file: file.into(),
                            field: name.clone(),
                            detail: format!("{INDEX} puts it in {f}"),
                        }),
                        None => problems.push(Error::ModelFile {
                            file: file.into(),
                            field: name.clone(),
                            detail: format!("a tensor {INDEX} does not list"),
                        }),
                    }
                }
                if let Some(first) = where_.insert(name.clone(), file) {
                    problems.push(Error::DuplicateTensor { name: format!("{name} (in {first} and {file})") });
                }
                tensors.insert(name, entry);
            }
        }
        if let Some(ix) = index {
            for (name, file) in &ix.weight_map {
                let open = shards.iter().any(|(f, _)| f == file);
                if open && !tensors.contains_key(name) {
                    problems.push(Error::ModelFile {
                        file: file.clone(),
                        field: name.clone(),
                        detail: format!("listed in {INDEX}, absent from the shard"),
                    });
                } else if !open {
                    problems.push(Error::ModelFile {
                        file: file.clone(),
                        field: "(file)".into(),
                        detail: format!("named by {INDEX} for {name}, not given"),
                    });
                }
            }
        }
        let layout = HfLayout::detect(&tensors.keys().map(String::as_str).collect::<Vec<_>>());
        let naming = Naming::Hf { layout, renames: &[] };
        problems.extend(
            unreadable.into_iter().filter(|e| !matches!(e, Error::ModelFile { field, .. } if naming.ignorable(field))),
        );
        Ok((Shards { bufs: shards.iter().map(|s| s.1).collect(), tensors, naming }, problems))
    }

    /// Name the tensors as a family's checkpoints do, `renames` its
    /// names that differ from Llama's.
    pub(crate) fn family_names(mut self, renames: &'static [(&'static str, &'static str)]) -> Self {
        if let Naming::Hf { layout, .. } = self.naming {
            self.naming = Naming::Hf { layout, renames };
        }
        self
    }

    /// The dtype each tensor was saved in, counted (for reporting).
    pub fn dtypes(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for e in self.tensors.values() {
            *m.entry(format!("{:?}", e.dtype)).or_insert(0) += 1;
        }
        m
    }
}

impl TensorDir for Shards<'_> {
    fn naming(&self) -> Naming {
        self.naming
    }
    fn get(&self, name: &str) -> Option<Located<'_>> {
        let e = self.tensors.get(name)?;
        let data = &self.bufs[e.buf][e.start..e.start + e.len];
        Some(Located { buf: e.buf, start: e.start, data, ty: e.ty?, dims: e.dims.clone() })
    }
    fn names(&self) -> Vec<&str> {
        self.tensors.keys().map(String::as_str).collect()
    }
}
