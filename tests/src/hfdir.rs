//! Scratch copies of the tiny HF models with one thing changed, for the
//! directory tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde_json::Value;

use crate::{fixtures, oracle_dir};

/// A tiny HF checkpoint: the shared oracle's, then the newer families'
/// (fixtures/tiny, made by make_tiny_families.py).
pub fn tiny(name: &str) -> PathBuf {
    let shared = oracle_dir().join("tiny").join(name);
    if shared.exists() {
        shared
    } else {
        fixtures().join("tiny").join(name)
    }
}

/// A fresh copy of a tiny model in a scratch folder.
pub fn copy(name: &str, case: &str) -> PathBuf {
    let src = tiny(name);
    let dst = std::env::temp_dir().join(format!("tern-hf-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    dst
}

pub type Tensor = (Dtype, Vec<usize>, Vec<u8>);

/// Rewrite a shard through `edit` (name → dtype, shape, bytes).
pub fn edit_shard(path: &Path, edit: impl FnOnce(&mut HashMap<String, Tensor>)) {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut m: HashMap<String, Tensor> =
        st.tensors().into_iter().map(|(n, v)| (n, (v.dtype(), v.shape().to_vec(), v.data().to_vec()))).collect();
    edit(&mut m);
    let views: Vec<(String, TensorView)> =
        m.iter().map(|(n, (d, s, b))| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap())).collect();
    safetensors::tensor::serialize_to_file(views, None, path).unwrap();
}

pub fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}
