//! The prompt of SPEC.md section 2, cut into the segments the scorer needs:
//!
//! ```text
//! prefix    chat head, system message, user turn up to the first candidate
//! candidate "[i] <text>\n"                       (one per slot)
//! tail      rest of the user turn, end of turn, assistant head, "Grades:\n"
//! slot      "[i] Grade: <placeholder>\n"          (one per slot)
//! ```
//!
//! A batched window is `prefix + candidates + tail + slots`; an invariant
//! block is `candidate[1] + tail + slot[1]`, exactly what a width-1 prompt
//! holds after its prefix. Segments are tokenized separately. Every segment
//! ends in exactly one newline after a non-space character: byte-level BPE
//! pre-tokenizers then cut the whole text at the same places (a segment
//! ending in `"\n\n"` would not: alone it is one token, before `[` two), so
//! the concatenation equals tokenizing the whole text (tested on DL19, and
//! checked against llama.cpp's tokenization in the parity fixture).

use ocrank_engine::{Engine, Message};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const DEFAULT_SYSTEM: &str = "You are a careful relevance judge.";
pub const DEFAULT_MAX_CHARS: usize = 1200;

/// What is being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Passage relevance to a search query (graded 0-3).
    Passage,
    /// Does the passage support answering the question (multi-document QA).
    Qa,
    /// Quality of a response to a prompt (response ranking).
    Response,
}

/// Where the rubric and output instructions sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// SPEC.md section 2: candidates, then the judging line, rubric and output form.
    Standard,
    /// Rubric and output form before the candidates, so invariant blocks stay short.
    Compact,
}

impl std::str::FromStr for Task {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "passage" => Ok(Task::Passage),
            "qa" => Ok(Task::Qa),
            "response" => Ok(Task::Response),
            _ => Err(format!("unknown task {s:?} (passage, qa, response)")),
        }
    }
}

impl std::str::FromStr for Template {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "standard" => Ok(Template::Standard),
            "compact" => Ok(Template::Compact),
            _ => Err(format!("unknown template {s:?} (standard, compact)")),
        }
    }
}

struct TaskText {
    instruction: &'static str,
    query_label: &'static str,
    item: &'static str,
    items_label: &'static str,
    rubric: &'static str,
}

fn task_text(task: Task) -> TaskText {
    match task {
        Task::Passage => TaskText {
            instruction: "Grade how relevant each document is to the search query.",
            query_label: "Query",
            item: "document",
            items_label: "Documents",
            rubric: "3 = answers the query directly and completely\n2 = strongly relevant but incomplete\n1 = weakly relevant or background\n0 = not relevant",
        },
        Task::Qa => TaskText {
            instruction: "Grade how well each passage supports answering the question.",
            query_label: "Question",
            item: "passage",
            items_label: "Passages",
            rubric: "3 = contains the answer or a fact needed to reach it\n2 = strongly related and partly supporting\n1 = on the topic but not supporting\n0 = unrelated",
        },
        Task::Response => TaskText {
            instruction: "Grade the quality of each response to the prompt.",
            query_label: "Prompt",
            item: "response",
            items_label: "Responses",
            rubric: "3 = follows the instruction fully, correct and helpful\n2 = mostly follows it, with minor flaws\n1 = partly follows it, with major flaws\n0 = fails to follow the instruction",
        },
    }
}

/// Collapse whitespace and cut to at most `max_chars` Unicode scalar values.
pub fn clean_text(text: &str, max_chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(max_chars) {
        Some((cut, _)) => collapsed[..cut].trim_end().to_string(),
        None => collapsed,
    }
}

/// Prompt settings shared by every window of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptConfig {
    pub task: Task,
    pub template: Template,
    pub system: String,
    pub max_chars: usize,
    /// The grade written in each slot line before the model reads it.
    pub placeholder: String,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            task: Task::Passage,
            template: Template::Standard,
            system: DEFAULT_SYSTEM.to_string(),
            max_chars: DEFAULT_MAX_CHARS,
            placeholder: "0".to_string(),
        }
    }
}

/// The text segments around the candidates of one query's prompts.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptText {
    pub prefix: String,
    pub tail: String,
}

impl PromptConfig {
    /// The judging line, rubric and output form. Independent of the window's
    /// width, so that one query prefix serves windows of every size.
    fn instructions(&self) -> String {
        let t = task_text(self.task);
        format!(
            "Judge every {item} on its own, regardless of the other {item}s and of their order.\nRubric:\n{rubric}\nAnswer with one line per {item}, in order, in the form [<id>] Grade: <0|1|2|3>",
            item = t.item,
            rubric = t.rubric,
        )
    }

    /// The candidate line of slot `slot` (1-based). An empty text (CapCal's
    /// probe) gives `[i]` alone: no segment ends in two whitespace characters.
    pub fn candidate_line(&self, slot: usize, text: &str) -> String {
        let text = clean_text(text, self.max_chars);
        if text.is_empty() {
            format!("[{slot}]\n")
        } else {
            format!("[{slot}] {text}\n")
        }
    }

    /// The slot line of slot `slot` (1-based), with the placeholder grade.
    pub fn slot_line(&self, slot: usize) -> String {
        format!("[{slot}] Grade: {}\n", self.placeholder)
    }

    /// The whole text of a batched window (prefix, candidates, tail, slots).
    pub fn window_text(&self, text: &PromptText, candidates: &[&str]) -> String {
        let mut out = text.prefix.clone();
        for (i, c) in candidates.iter().enumerate() {
            out.push_str(&self.candidate_line(i + 1, c));
        }
        out.push_str(&text.tail);
        for i in 0..candidates.len() {
            out.push_str(&self.slot_line(i + 1));
        }
        out
    }

    /// An invariant block: what a width-1 prompt holds after its prefix.
    pub fn block_text(&self, text: &PromptText, candidate: &str) -> String {
        format!(
            "{}{}{}",
            self.candidate_line(1, candidate),
            text.tail,
            self.slot_line(1)
        )
    }

    /// Renders the chat template around the user message and cuts it into
    /// prefix (up to the first candidate) and tail (after the last one).
    pub fn render(&self, engine: &Engine, query: &str) -> Result<PromptText> {
        let t = task_text(self.task);
        let query = clean_text(query, self.max_chars);
        let head = match self.template {
            Template::Standard => format!(
                "{}\n{}: {query}\n\n{}:\n",
                t.instruction, t.query_label, t.items_label
            ),
            Template::Compact => format!(
                "{}\n{}\n\n{}: {query}\n\n{}:\n",
                t.instruction,
                self.instructions(),
                t.query_label,
                t.items_label
            ),
        };
        let foot = match self.template {
            Template::Standard => format!("\n{}", self.instructions()),
            Template::Compact => String::new(),
        };
        // The candidates' place is marked so that the rendered template can be
        // cut there; the marker never reaches the model.
        const MARK: &str = "\u{1}OCRANK-CANDIDATES\u{1}";
        let user = format!("{head}{MARK}{foot}");
        let rendered = engine.template.render(&[
            Message::new("system", self.system.clone()),
            Message::new("user", user),
        ])?;
        let (prefix, tail) = rendered
            .split_once(MARK)
            .ok_or_else(|| Error::Prompt("the chat template dropped the user message".into()))?;
        if !prefix.ends_with('\n') || prefix[..prefix.len() - 1].ends_with(char::is_whitespace) {
            return Err(Error::Prompt(
                "the prompt prefix must end in exactly one newline (segment boundary)".into(),
            ));
        }
        Ok(PromptText {
            prefix: prefix.to_string(),
            tail: format!("{tail}Grades:\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_counts_characters_not_bytes() {
        assert_eq!(clean_text("  a \n\t b  ", 10), "a b");
        assert_eq!(clean_text("ééééé", 3), "ééé");
        assert_eq!(clean_text("ab cd", 3), "ab");
        assert_eq!(clean_text("Ã‚Â x", 3), "Ã‚Â");
    }
}
