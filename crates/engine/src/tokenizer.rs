//! Tokenizers: Hugging Face `tokenizer.json`, or built from a GGUF file's
//! `tokenizer.ggml.*` metadata (BPE vocabulary, merges, token types and the
//! pre-tokenizer named by `tokenizer.ggml.pre`).

use std::path::Path;

use candle_core::quantized::gguf_file::Value;
use serde_json::{json, Value as Json};

use crate::error::{Error, Result};
use crate::gguf::GgufFile;

/// A token with its byte span in the encoded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub id: u32,
    pub start: usize,
    pub end: usize,
}

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

// GPT-2's pre-tokenizer regex, as llama.cpp and Hugging Face use it.
const QWEN2_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn split(regex: &str) -> Json {
    json!({"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false})
}

fn byte_level(use_regex: bool) -> Json {
    json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": use_regex})
}

/// The pre-tokenizer llama.cpp applies for a `tokenizer.ggml.pre` value.
fn pre_tokenizer(pre: &str) -> Option<Json> {
    let seq = |items: Vec<Json>| json!({"type": "Sequence", "pretokenizers": items});
    Some(match pre {
        "default" | "gpt2" | "gpt-2" | "mpt" | "olmo" | "jais" => byte_level(true),
        // Digits are split one by one before the GPT-2 regex.
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" => {
            seq(vec![split(r"\p{N}"), byte_level(true)])
        }
        "qwen2" | "stablelm2" | "deepseek-r1-qwen" => {
            seq(vec![split(QWEN2_REGEX), byte_level(false)])
        }
        "llama3" | "llama-bpe" | "smaug-bpe" => seq(vec![split(LLAMA3_REGEX), byte_level(false)]),
        _ => return None,
    })
}

impl Tokenizer {
    pub fn from_file(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| Error::model(path, format!("cannot read tokenizer: {e}")))?;
        Ok(Tokenizer { inner })
    }

    /// Builds the tokenizer that llama.cpp would build from the GGUF metadata.
    pub fn from_gguf(gguf: &GgufFile) -> Result<Self> {
        let model = gguf.meta_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(gguf.err(format!(
                "tokenizer.ggml.model {model:?} is not supported (byte-level BPE \"gpt2\" only)"
            )));
        }
        let pre = gguf.meta_str("tokenizer.ggml.pre").unwrap_or("default");
        let pre_tok = pre_tokenizer(pre)
            .ok_or_else(|| gguf.err(format!("tokenizer.ggml.pre {pre:?} is not supported")))?;
        let strings = |key: &str| -> Result<Vec<String>> {
            let v = gguf
                .meta(key)
                .ok_or_else(|| gguf.err(format!("metadata {key} is missing")))?;
            let arr = v
                .to_vec()
                .map_err(|_| gguf.err(format!("{key} is not an array")))?;
            arr.iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(gguf.err(format!("{key} holds a non-string"))),
                })
                .collect()
        };
        let tokens = strings("tokenizer.ggml.tokens")?;
        let merges = strings("tokenizer.ggml.merges")?;
        let types: Vec<i64> = match gguf.meta("tokenizer.ggml.token_type") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.to_i32().map(|v| v as i64).unwrap_or(1))
                .collect(),
            _ => vec![1; tokens.len()],
        };
        let mut vocab = serde_json::Map::with_capacity(tokens.len());
        let mut added = Vec::new();
        for (id, tok) in tokens.iter().enumerate() {
            vocab.insert(tok.clone(), json!(id));
            // 3 = control, 4 = user-defined: matched verbatim in the text.
            let ty = types.get(id).copied().unwrap_or(1);
            if ty == 3 || ty == 4 {
                added.push(json!({
                    "id": id, "content": tok, "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": ty == 3
                }));
            }
        }
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre_tok,
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true},
            "model": {
                "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                "ignore_merges": false, "vocab": vocab, "merges": merges
            }
        });
        let inner: tokenizers::Tokenizer = serde_json::from_value::<tokenizers::Tokenizer>(spec)
            .map_err(|e| gguf.err(format!("cannot build the tokenizer from metadata: {e}")))?;
        Ok(Tokenizer { inner })
    }

    /// Token ids with byte offsets; special tokens in the text are matched,
    /// nothing is added around it.
    pub fn encode(&self, text: &str) -> Result<Vec<Token>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(enc
            .get_ids()
            .iter()
            .zip(enc.get_offsets())
            .map(|(&id, &(start, end))| Token { id, start, end })
            .collect())
    }

    pub fn encode_ids(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.encode(text)?.into_iter().map(|t| t.id).collect())
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| Error::Tokenizer(e.to_string()))
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Writes the tokenizer as a Hugging Face `tokenizer.json`.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.inner
            .save(path, false)
            .map_err(|e| Error::Tokenizer(format!("{}: {e}", path.display())))
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }
}
