//! The chain's stages and their order (llama-server's `samplers`: names,
//! with llama.cpp's aliases, or one letter each).

use alloc::format;
use alloc::vec::Vec;

use crate::error::{Error, Result};

/// A stage of the sampler chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "std", serde(rename_all = "snake_case"))]
pub enum Stage {
    /// Repetition, presence and frequency penalties.
    Penalties,
    /// DRY.
    Dry,
    /// Top-k.
    TopK,
    /// Locally typical sampling.
    TypP,
    /// Top-p (nucleus).
    TopP,
    /// Min-p.
    MinP,
    /// XTC (exclude the top choices).
    Xtc,
    /// Temperature (0: the most likely token).
    Temperature,
}

/// llama.cpp's default order.
pub const DEFAULT_ORDER: [Stage; 8] =
    [Stage::Penalties, Stage::Dry, Stage::TopK, Stage::TypP, Stage::TopP, Stage::MinP, Stage::Xtc, Stage::Temperature];

/// Stages llama.cpp has that this chain does not.
const ABSENT: [&str; 4] = ["top_n_sigma", "infill", "adaptive_p", "mirostat"];

impl Stage {
    /// The stage a name stands for: llama.cpp's names (`top_k`, `typ_p`,
    /// `temperature`, …), their `top-k` and `topk` spellings, `nucleus`,
    /// `temp`, `typ`.
    pub fn parse(name: &str) -> Result<Stage> {
        let key: alloc::string::String = name.chars().filter(|c| *c != '_' && *c != '-').collect();
        Ok(match key.as_str() {
            "penalties" => Stage::Penalties,
            "dry" => Stage::Dry,
            "topk" => Stage::TopK,
            "typp" | "typ" | "typical" | "typicalp" => Stage::TypP,
            "topp" | "nucleus" => Stage::TopP,
            "minp" => Stage::MinP,
            "xtc" => Stage::Xtc,
            "temperature" | "temp" => Stage::Temperature,
            _ => {
                let absent = ABSENT.iter().any(|a| a.replace('_', "") == key);
                let what = match absent {
                    true => format!("the {name} sampler is not in tern's chain"),
                    false => format!("unknown sampler {name:?}"),
                };
                let names = "penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature";
                return Err(Error::InvalidField { field: "samplers".into(), what: format!("{what} (it has {names})") });
            }
        })
    }

    /// A stage by its letter (llama.cpp's `--sampling-seq`: `e d k y p m x t`).
    pub fn of_letter(c: char) -> Result<Stage> {
        Ok(match c {
            'e' => Stage::Penalties,
            'd' => Stage::Dry,
            'k' => Stage::TopK,
            'y' => Stage::TypP,
            'p' => Stage::TopP,
            'm' => Stage::MinP,
            'x' => Stage::Xtc,
            't' => Stage::Temperature,
            _ => {
                let what = format!("unknown sampler letter {c:?} (e d k y p m x t)");
                return Err(Error::InvalidField { field: "samplers".into(), what });
            }
        })
    }

    /// An order from one string of letters (`"kpmt"`).
    pub fn order_of_letters(letters: &str) -> Result<Vec<Stage>> {
        if letters.chars().count() > 32 {
            return Err(Error::InvalidField { field: "samplers".into(), what: "more than 32 stages".into() });
        }
        letters.chars().map(Stage::of_letter).collect()
    }

    /// An order from names.
    pub fn order(names: &[&str]) -> Result<Vec<Stage>> {
        if names.len() > 32 {
            return Err(Error::InvalidField { field: "samplers".into(), what: "more than 32 stages".into() });
        }
        names.iter().map(|n| Stage::parse(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn names_and_aliases_parse_and_the_absent_are_named() {
        assert_eq!(
            Stage::order(&["top-k", "minp", "nucleus", "temp", "typ_p"]).unwrap(),
            [Stage::TopK, Stage::MinP, Stage::TopP, Stage::Temperature, Stage::TypP]
        );
        assert_eq!(Stage::of_letter('x').unwrap(), Stage::Xtc);
        let e = Stage::parse("top_n_sigma").unwrap_err().to_string();
        assert!(e.contains("not in tern's chain"), "{e}");
        assert!(Stage::parse("wobble").unwrap_err().to_string().contains("unknown sampler"));
    }
}
