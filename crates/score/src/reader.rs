//! The frozen reader of SPEC.md section 3 (answer flip): it answers a
//! question from the top passages of one permutation's ranking, given in
//! ranking order, with a short answer decoded greedily. Greedy decoding makes
//! the reader a function of its input: two permutations whose rankings put
//! the same passages in the same order at the top get the same answer, so
//! every answer flip comes from the scorer's rankings, not from sampling.
//!
//! ```text
//! system     "You are a careful reader. ..."
//! user       instruction, "Passages:", "[1] <text>" .. "[k] <text>",
//!            "Question: <question>", the answer form
//! assistant  "Answer:" then the decoded tokens, up to the first line break
//! ```

use std::time::Instant;

use ocrank_engine::{Engine, Message};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::prompt::{clean_text, DEFAULT_MAX_CHARS};

pub const DEFAULT_READER_SYSTEM: &str =
    "You are a careful reader. You answer questions from the passages you are given.";
/// Passages the reader sees (SPEC.md: the top 5 of each permutation's ranking).
pub const DEFAULT_TOP: usize = 5;
pub const DEFAULT_MAX_NEW_TOKENS: usize = 24;

/// Reader settings: everything besides the model that determines an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderConfig {
    pub system: String,
    /// Each passage is cut to this many characters after collapsing whitespace.
    pub max_chars: usize,
    /// Most tokens decoded for one answer.
    pub max_new_tokens: usize,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        ReaderConfig {
            system: DEFAULT_READER_SYSTEM.into(),
            max_chars: DEFAULT_MAX_CHARS,
            max_new_tokens: DEFAULT_MAX_NEW_TOKENS,
        }
    }
}

/// One answer and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The first line of the decoded text, trimmed.
    pub text: String,
    /// Everything decoded, special tokens included (for inspection).
    pub raw: String,
    pub prompt_tokens: usize,
    pub new_tokens: usize,
    /// True when decoding ended at a line break or the end-of-turn token,
    /// false when it ran into `max_new_tokens`.
    pub finished: bool,
    pub seconds: f64,
}

impl ReaderConfig {
    /// The user message: instruction, numbered passages, question, answer form.
    pub fn user_message(&self, question: &str, passages: &[&str]) -> String {
        let mut out = String::from(
            "Answer the question using the passages below. The passages are search results; some may be irrelevant.\n\nPassages:\n",
        );
        for (i, p) in passages.iter().enumerate() {
            out.push_str(&format!("[{}] {}\n", i + 1, clean_text(p, self.max_chars)));
        }
        out.push_str(&format!(
            "\nQuestion: {}\nAnswer with a short phrase only (a name, a date, a number, or yes or no), on one line.",
            clean_text(question, self.max_chars)
        ));
        out
    }

    /// The whole prompt: the chat template around the system and user
    /// messages, then the assistant prefix `Answer:`.
    pub fn prompt_text(
        &self,
        engine: &Engine,
        question: &str,
        passages: &[&str],
    ) -> Result<String> {
        let rendered = engine.template.render(&[
            Message::new("system", self.system.clone()),
            Message::new("user", self.user_message(question, passages)),
        ])?;
        Ok(format!("{rendered}Answer:"))
    }

    /// Answers `question` from `passages` (in the order given) with
    /// greedy decoding. A prompt that leaves no room in the model's context
    /// for `max_new_tokens` is an error naming both lengths.
    pub fn answer(&self, engine: &Engine, question: &str, passages: &[&str]) -> Result<Answer> {
        if self.max_new_tokens == 0 {
            return Err(Error::Prompt("the reader needs max_new_tokens >= 1".into()));
        }
        let start = Instant::now();
        let text = self.prompt_text(engine, question, passages)?;
        let prompt = engine.tokenizer.encode_ids(&text)?;
        let context = engine.decoder.cfg.context_length;
        if prompt.len() + self.max_new_tokens > context {
            return Err(Error::Prompt(format!(
                "the reader prompt has {} tokens; with {} new tokens it exceeds the model's context of {context} (cut passages with a smaller max_chars)",
                prompt.len(),
                self.max_new_tokens
            )));
        }
        let eos = engine.tokenizer.token_to_id(&engine.template.eos_token);
        let tokenizer = &engine.tokenizer;
        let mut finished = false;
        let tokens = engine.decoder.greedy(&prompt, self.max_new_tokens, |out| {
            let last = out[out.len() - 1];
            let done = Some(last) == eos
                || tokenizer
                    .decode(out)
                    .map(|s| s.trim_start().contains('\n'))
                    .unwrap_or(false);
            finished |= done;
            done
        })?;
        let raw = engine.tokenizer.decode(&tokens)?;
        Ok(Answer {
            text: first_line(&raw, &engine.template.eos_token),
            raw,
            prompt_tokens: prompt.len(),
            new_tokens: tokens.len(),
            finished,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}

/// The answer in decoded text: leading whitespace skipped, up to the first
/// line break or end-of-turn marker, trimmed.
pub fn first_line(raw: &str, eos: &str) -> String {
    let s = raw.trim_start();
    let s = if eos.is_empty() {
        s
    } else {
        s.split(eos).next().unwrap_or("")
    };
    s.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_skips_leading_space_and_stops_at_break_or_eos() {
        assert_eq!(first_line(" Paris\nmore", "<|im_end|>"), "Paris");
        assert_eq!(first_line("\n  Paris  \n", "<|im_end|>"), "Paris");
        assert_eq!(first_line(" yes<|im_end|>", "<|im_end|>"), "yes");
        assert_eq!(first_line("", "<|im_end|>"), "");
        assert_eq!(first_line(" a b", ""), "a b");
    }

    #[test]
    fn user_message_numbers_passages_in_the_order_given_and_cuts_them() {
        let cfg = ReaderConfig {
            max_chars: 5,
            ..ReaderConfig::default()
        };
        let m = cfg.user_message("Who?", &["alpha  beta", "gamma"]);
        assert!(
            m.contains("Passages:\n[1] alpha\n[2] gamma\n\nQuestion: Who?\n"),
            "{m}"
        );
    }
}
