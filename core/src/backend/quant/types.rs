//! ggml tensor types: ids as in GGUF, block sizes and bytes per block.

/// A ggml tensor type. Ids are GGUF's `ggml_type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    /// 32-bit float.
    F32,
    /// IEEE half float.
    F16,
    /// 4-bit, 32 per block, one scale.
    Q4_0,
    /// 4-bit, 32 per block, scale and min.
    Q4_1,
    /// 5-bit, 32 per block, one scale.
    Q5_0,
    /// 5-bit, 32 per block, scale and min.
    Q5_1,
    /// 8-bit, 32 per block, one scale.
    Q8_0,
    /// 8-bit, 32 per block, scale and sum (activations).
    Q8_1,
    /// 2-bit K-quant (256 per super-block).
    Q2_K,
    /// 3-bit K-quant.
    Q3_K,
    /// 4-bit K-quant.
    Q4_K,
    /// 5-bit K-quant.
    Q5_K,
    /// 6-bit K-quant.
    Q6_K,
    /// 8-bit K-quant (activations).
    Q8_K,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ2_XXS,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ2_XS,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ3_XXS,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ1_S,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ4_NL,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ3_S,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ2_S,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ4_XS,
    /// 8-bit integers.
    I8,
    /// 16-bit integers.
    I16,
    /// 32-bit integers.
    I32,
    /// 64-bit integers.
    I64,
    /// 64-bit float.
    F64,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    IQ1_M,
    /// bfloat16.
    BF16,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    TQ1_0,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    TQ2_0,
    /// An i-quant or other ggml type tern has no kernel for (named in errors).
    MXFP4,
}

/// Elements per K-quant super-block.
pub const QK_K: usize = 256;

use GgmlType::*;

impl GgmlType {
    /// The type of ggml type number `id`.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        Some(match id {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            9 => Q8_1,
            10 => Q2_K,
            11 => Q3_K,
            12 => Q4_K,
            13 => Q5_K,
            14 => Q6_K,
            15 => Q8_K,
            16 => IQ2_XXS,
            17 => IQ2_XS,
            18 => IQ3_XXS,
            19 => IQ1_S,
            20 => IQ4_NL,
            21 => IQ3_S,
            22 => IQ2_S,
            23 => IQ4_XS,
            24 => I8,
            25 => I16,
            26 => I32,
            27 => I64,
            28 => F64,
            29 => IQ1_M,
            30 => BF16,
            34 => TQ1_0,
            35 => TQ2_0,
            39 => MXFP4,
            _ => return None,
        })
    }

    /// (elements per block, bytes per block)
    #[inline]
    pub fn block(self) -> (usize, usize) {
        match self {
            F32 => (1, 4),
            F16 | BF16 => (1, 2),
            Q4_0 => (32, 18),
            Q4_1 => (32, 20),
            Q5_0 => (32, 22),
            Q5_1 => (32, 24),
            Q8_0 => (32, 34),
            Q8_1 => (32, 36),
            Q2_K => (QK_K, 84),
            Q3_K => (QK_K, 110),
            Q4_K => (QK_K, 144),
            Q5_K => (QK_K, 176),
            Q6_K => (QK_K, 210),
            Q8_K => (QK_K, 292),
            IQ2_XXS => (QK_K, 66),
            IQ2_XS => (QK_K, 74),
            IQ3_XXS => (QK_K, 98),
            IQ1_S => (QK_K, 50),
            IQ4_NL => (32, 18),
            IQ3_S => (QK_K, 110),
            IQ2_S => (QK_K, 82),
            IQ4_XS => (QK_K, 136),
            I8 => (1, 1),
            I16 => (1, 2),
            I32 => (1, 4),
            I64 | F64 => (1, 8),
            IQ1_M => (QK_K, 56),
            TQ1_0 => (QK_K, 54),
            TQ2_0 => (QK_K, 66),
            MXFP4 => (32, 17),
        }
    }

    #[inline]
    /// Elements per block.
    pub fn block_size(self) -> usize {
        self.block().0
    }

    #[inline]
    /// Bytes per block.
    pub fn type_size(self) -> usize {
        self.block().1
    }

    /// Bytes of a row of `n` elements, or None if `n` is not whole blocks.
    #[inline]
    pub fn row_bytes(self, n: usize) -> Option<usize> {
        let (bs, ts) = self.block();
        n.is_multiple_of(bs).then(|| n / bs * ts)
    }

    /// ggml's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            F32 => "F32",
            F16 => "F16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q8_1 => "Q8_1",
            Q2_K => "Q2_K",
            Q3_K => "Q3_K",
            Q4_K => "Q4_K",
            Q5_K => "Q5_K",
            Q6_K => "Q6_K",
            Q8_K => "Q8_K",
            IQ2_XXS => "IQ2_XXS",
            IQ2_XS => "IQ2_XS",
            IQ3_XXS => "IQ3_XXS",
            IQ1_S => "IQ1_S",
            IQ4_NL => "IQ4_NL",
            IQ3_S => "IQ3_S",
            IQ2_S => "IQ2_S",
            IQ4_XS => "IQ4_XS",
            I8 => "I8",
            I16 => "I16",
            I32 => "I32",
            I64 => "I64",
            F64 => "F64",
            IQ1_M => "IQ1_M",
            BF16 => "BF16",
            TQ1_0 => "TQ1_0",
            TQ2_0 => "TQ2_0",
            MXFP4 => "MXFP4",
        }
    }

    /// The activation format a weight type's dot product pairs with, as in
    /// ggml's `vec_dot_type`. None: the type has no kernel in tern.
    #[inline]
    pub fn vec_dot_type(self) -> Option<GgmlType> {
        match self {
            F32 | F16 | BF16 => Some(F32),
            Q4_0 | Q5_0 | Q8_0 | IQ4_NL => Some(Q8_0),
            Q4_1 | Q5_1 => Some(Q8_1),
            Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS => Some(Q8_K),
            _ => None,
        }
    }
}
