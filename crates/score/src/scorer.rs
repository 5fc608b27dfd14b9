//! Scoring modes (SPEC.md sections 2 and 4): every mode reads all slots of a
//! window in one forward pass over the query's cached prefix.
//!
//! - `batched`: `candidates + tail + slots` under causal attention.
//! - `pointwise`: one forward per candidate of `candidate[1] + tail + slot[1]`
//!   (width 1), the prefix computed once per query.
//! - `invariant`: the pointwise blocks of a window concatenated into one
//!   forward; each block attends to the prefix and causally to itself, its
//!   position ids restart at the prefix length. Its scores equal `pointwise`
//!   scores and do not depend on the order of the window.

use std::collections::HashMap;
use std::sync::Mutex;

use ocrank_data::{Pool, ScoreRecord};
use ocrank_engine::{Engine, ForwardInput, KvCache, MaskLayout};
use ocrank_plan::Partition;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::prompt::PromptConfig;
use crate::readout::{GradeDist, Readout};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Batched,
    Pointwise,
    Invariant,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "batched" => Ok(Mode::Batched),
            "pointwise" => Ok(Mode::Pointwise),
            "invariant" => Ok(Mode::Invariant),
            _ => Err(format!(
                "unknown mode {s:?} (batched, pointwise, invariant)"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Batched => "batched",
            Mode::Pointwise => "pointwise",
            Mode::Invariant => "invariant",
        })
    }
}

/// Everything that determines a score, apart from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreConfig {
    pub prompt: PromptConfig,
    pub mode: Mode,
    /// Window width B (slots per window).
    pub width: usize,
    pub partition: Partition,
    /// Hide earlier slots' placeholder grades from later tokens.
    pub hide_placeholders: bool,
    /// CapCal strength alpha; None = no calibration.
    pub capcal: Option<f64>,
    pub readout: Readout,
}

impl Default for ScoreConfig {
    fn default() -> Self {
        ScoreConfig {
            prompt: PromptConfig::default(),
            mode: Mode::Batched,
            width: 20,
            partition: Partition::Contiguous,
            hide_placeholders: false,
            capcal: None,
            readout: Readout::Expected,
        }
    }
}

/// Tokens of one slot line and where it is read.
#[derive(Debug, Clone)]
struct SlotLine {
    tokens: Vec<u32>,
    /// Index of the token whose next-token distribution is the slot's grade.
    readout: usize,
    /// Index of the placeholder token.
    placeholder: usize,
}

/// A token sequence to run after the prefix, with its layout.
#[derive(Debug, Clone, Default)]
pub struct Sequence {
    pub tokens: Vec<u32>,
    pub positions: Vec<u32>,
    /// Block ids and hidden keys of the tokens (the engine's attention layout).
    pub mask: MaskLayout,
    /// Readout indices, one per slot in slot order.
    pub readout: Vec<usize>,
}

impl Sequence {
    /// The whole sequence with the query's prefix in front, seen by every
    /// token whatever its block (one forward without a cached prefix:
    /// training).
    pub fn with_prefix(&self, prefix: &[u32]) -> Sequence {
        let p = prefix.len();
        let mut tokens = prefix.to_vec();
        tokens.extend(&self.tokens);
        let mut positions: Vec<u32> = (0..p as u32).collect();
        positions.extend(&self.positions);
        // Every token sees the prefix, in whichever block it is; a causal
        // sequence (one block, 0, the prefix's) needs no shared lead, and
        // stays packable.
        let mut mask = MaskLayout::causal(p);
        if self.mask.block.iter().any(|&b| b != 0) {
            mask.shared = p;
        }
        mask.block.extend(&self.mask.block);
        mask.hidden.extend(&self.mask.hidden);
        Sequence {
            tokens,
            positions,
            mask,
            readout: self.readout.iter().map(|r| r + p).collect(),
        }
    }

    pub fn forward_input(&self) -> ForwardInput<'_> {
        ForwardInput::whole(&self.tokens, &self.positions, &self.mask, &self.readout)
    }
}

/// A query's rendered prompt segments and their tokens.
#[derive(Debug, Clone)]
pub struct QueryText {
    pub text: crate::prompt::PromptText,
    pub prefix_tokens: Vec<u32>,
    pub tail_tokens: Vec<u32>,
}

/// A query's prompt and the KV cache of its prefix, computed once and shared
/// by every window and permutation of the query.
pub struct QueryContext {
    pub query: QueryText,
    pub cache: KvCache,
    probes: Mutex<HashMap<usize, Vec<GradeDist>>>,
}

/// Cost of scoring one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub forwards: usize,
    /// New tokens run through the model (the cached prefix not counted).
    pub tokens: usize,
}

pub struct WindowScores {
    pub dists: Vec<GradeDist>,
    pub cost: Cost,
}

pub struct Scorer<'e> {
    pub engine: &'e Engine,
    pub cfg: ScoreConfig,
    grade_ids: [u32; 4],
    slot_lines: Mutex<HashMap<usize, SlotLine>>,
}

impl<'e> Scorer<'e> {
    /// Validates the configuration against the model's tokenizer: every
    /// grade digit must be exactly one token where the slot reads it.
    pub fn new(engine: &'e Engine, cfg: ScoreConfig) -> Result<Self> {
        if cfg.width == 0 {
            return Err(Error::Prompt("width must be at least 1".into()));
        }
        if cfg.prompt.placeholder.is_empty() {
            return Err(Error::Prompt(
                "the placeholder grade must not be empty".into(),
            ));
        }
        let mut scorer = Scorer {
            engine,
            cfg,
            grade_ids: [0; 4],
            slot_lines: Mutex::new(HashMap::new()),
        };
        scorer.grade_ids = scorer.find_grade_ids()?;
        Ok(scorer)
    }

    pub fn grade_ids(&self) -> [u32; 4] {
        self.grade_ids
    }

    fn describe(&self, ids: &[u32]) -> String {
        ids.iter()
            .map(|&id| {
                format!(
                    "{:?}",
                    self.engine.tokenizer.decode(&[id]).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Tokenizes a slot line and finds its placeholder token (exactly the
    /// placeholder, possibly with the whitespace before it) and the token
    /// before it, where the grade is read.
    fn tokenize_slot_line(&self, line: &str, grade: &str) -> Result<(Vec<u32>, usize)> {
        let toks = self.engine.tokenizer.encode(line)?;
        let end = line.len() - 1; // before the newline
        let start = end - grade.len();
        let err = || Error::GradeToken {
            grade: grade.to_string(),
            line: line.to_string(),
            tokens: self.describe(&toks.iter().map(|t| t.id).collect::<Vec<_>>()),
        };
        let idx = toks
            .iter()
            .position(|t| t.start <= start && t.end > start)
            .ok_or_else(err)?;
        let tok = toks[idx];
        if tok.end != end || !line[tok.start..start].trim().is_empty() || idx == 0 {
            return Err(err());
        }
        Ok((toks.iter().map(|t| t.id).collect(), idx))
    }

    fn find_grade_ids(&self) -> Result<[u32; 4]> {
        let mut ids = [0u32; 4];
        let template = self.cfg.prompt.slot_line(1);
        let ph = &self.cfg.prompt.placeholder;
        let base = &template[..template.len() - 1 - ph.len()];
        for (g, id) in ids.iter_mut().enumerate() {
            let digit = g.to_string();
            let line = format!("{base}{digit}\n");
            let (toks, idx) = self.tokenize_slot_line(&line, &digit)?;
            *id = toks[idx];
        }
        if ids.iter().collect::<std::collections::HashSet<_>>().len() != 4 {
            return Err(Error::Prompt(format!(
                "the four grades map to the tokens {}, not four distinct ones",
                self.describe(&ids)
            )));
        }
        // The placeholder itself must be one token in the same place.
        self.slot_line(1)?;
        Ok(ids)
    }

    fn slot_line(&self, slot: usize) -> Result<SlotLine> {
        if let Some(s) = self.slot_lines.lock().unwrap().get(&slot) {
            return Ok(s.clone());
        }
        let line = self.cfg.prompt.slot_line(slot);
        let (tokens, placeholder) = self.tokenize_slot_line(&line, &self.cfg.prompt.placeholder)?;
        let s = SlotLine {
            tokens,
            readout: placeholder - 1,
            placeholder,
        };
        self.slot_lines.lock().unwrap().insert(slot, s.clone());
        Ok(s)
    }

    /// Renders and tokenizes the query's prompt segments.
    pub fn query_text(&self, query: &str) -> Result<QueryText> {
        let text = self.cfg.prompt.render(self.engine, query)?;
        let prefix_tokens = self.engine.tokenizer.encode_ids(&text.prefix)?;
        let tail_tokens = self.engine.tokenizer.encode_ids(&text.tail)?;
        let ctx = self.engine.decoder.cfg.context_length;
        if prefix_tokens.len() >= ctx {
            return Err(Error::Prompt(format!(
                "the prompt prefix is {} tokens, over the model's context of {ctx}",
                prefix_tokens.len()
            )));
        }
        Ok(QueryText {
            text,
            prefix_tokens,
            tail_tokens,
        })
    }

    /// Renders the query's prompt and prefills its shared prefix.
    pub fn prepare(&self, query: &str) -> Result<QueryContext> {
        let query = self.query_text(query)?;
        let cache = self.engine.decoder.prefill(&query.prefix_tokens)?;
        Ok(QueryContext {
            query,
            cache,
            probes: Mutex::new(HashMap::new()),
        })
    }

    fn candidate_tokens(&self, slot: usize, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .engine
            .tokenizer
            .encode_ids(&self.cfg.prompt.candidate_line(slot, text))?)
    }

    /// The batched sequence of a window: candidates, tail, slot lines.
    pub fn batched_sequence(&self, q: &QueryText, texts: &[&str]) -> Result<Sequence> {
        let mut seq = Sequence::default();
        let push = |seq: &mut Sequence, toks: &[u32], hidden_at: Option<usize>| {
            for (i, &t) in toks.iter().enumerate() {
                seq.tokens.push(t);
                seq.mask.hidden.push(Some(i) == hidden_at);
            }
        };
        for (i, text) in texts.iter().enumerate() {
            push(&mut seq, &self.candidate_tokens(i + 1, text)?, None);
        }
        push(&mut seq, &q.tail_tokens, None);
        for i in 0..texts.len() {
            let line = self.slot_line(i + 1)?;
            let at = seq.tokens.len();
            seq.readout.push(at + line.readout);
            let hide = self.cfg.hide_placeholders.then_some(line.placeholder);
            push(&mut seq, &line.tokens, hide);
        }
        let p = q.prefix_tokens.len() as u32;
        seq.positions = (0..seq.tokens.len() as u32).map(|i| p + i).collect();
        seq.mask.block = vec![0; seq.tokens.len()];
        Ok(seq)
    }

    /// The invariant sequence of a window: one width-1 block per candidate,
    /// each with its own block id and positions restarting at the prefix.
    pub fn invariant_sequence(&self, q: &QueryText, texts: &[&str]) -> Result<Sequence> {
        let line = self.slot_line(1)?;
        let mut seq = Sequence::default();
        let p = q.prefix_tokens.len() as u32;
        for (b, text) in texts.iter().enumerate() {
            let cand = self.candidate_tokens(1, text)?;
            let start = seq.tokens.len();
            seq.tokens.extend(&cand);
            seq.tokens.extend(&q.tail_tokens);
            let slot_at = seq.tokens.len();
            seq.tokens.extend(&line.tokens);
            seq.readout.push(slot_at + line.readout);
            let len = seq.tokens.len() - start;
            seq.positions.extend((0..len as u32).map(|i| p + i));
            seq.mask.block.extend(std::iter::repeat_n(b as u32, len));
            seq.mask
                .hidden
                .extend((0..len).map(|i| {
                    self.cfg.hide_placeholders && start + i == slot_at + line.placeholder
                }));
        }
        Ok(seq)
    }

    fn run(&self, ctx: &QueryContext, seq: &Sequence) -> Result<Vec<GradeDist>> {
        let ctx_len = self.engine.decoder.cfg.context_length;
        let total = ctx.cache.len + seq.tokens.len();
        let max_pos = seq.positions.iter().copied().max().unwrap_or(0) as usize;
        if max_pos >= ctx_len || (self.cfg.mode == Mode::Batched && total > ctx_len) {
            return Err(Error::Prompt(format!(
                "a window of {} tokens after a prefix of {} exceeds the model's context of {ctx_len} tokens; lower --width or --max-chars",
                seq.tokens.len(),
                ctx.cache.len
            )));
        }
        let out = self.engine.decoder.forward(&ForwardInput {
            tokens: &seq.tokens,
            positions: &seq.positions,
            mask: &seq.mask,
            prefix: Some(&ctx.cache),
            readout: &seq.readout,
            keep_cache: false,
            dropout: None,
        })?;
        // f32, or f64 from an f64 model (the gradient tests' reference).
        let logits = out
            .logits
            .to_dtype(ocrank_engine::DType::F32)
            .and_then(|l| l.to_vec2::<f32>())
            .map_err(ocrank_engine::Error::from)?;
        Ok(logits
            .iter()
            .map(|row| GradeDist::from_logits(row, &self.grade_ids))
            .collect())
    }

    /// Grade distributions of a window's slots (before CapCal).
    pub fn read_window(&self, ctx: &QueryContext, texts: &[&str]) -> Result<WindowScores> {
        match self.cfg.mode {
            Mode::Batched | Mode::Invariant => {
                let seq = if self.cfg.mode == Mode::Batched {
                    self.batched_sequence(&ctx.query, texts)?
                } else {
                    self.invariant_sequence(&ctx.query, texts)?
                };
                let dists = self.run(ctx, &seq)?;
                Ok(WindowScores {
                    dists,
                    cost: Cost {
                        forwards: 1,
                        tokens: seq.tokens.len(),
                    },
                })
            }
            Mode::Pointwise => {
                let mut dists = Vec::with_capacity(texts.len());
                let mut cost = Cost::default();
                for text in texts {
                    let seq = self.invariant_sequence(&ctx.query, &[text])?;
                    dists.extend(self.run(ctx, &seq)?);
                    cost.forwards += 1;
                    cost.tokens += seq.tokens.len();
                }
                Ok(WindowScores { dists, cost })
            }
        }
    }

    /// CapCal's content-free probe: the same window with every candidate
    /// text empty (cached per window size).
    fn probe(&self, ctx: &QueryContext, size: usize) -> Result<Vec<GradeDist>> {
        if let Some(p) = ctx.probes.lock().unwrap().get(&size) {
            return Ok(p.clone());
        }
        let empty = vec![""; size];
        let dists = self.read_window(ctx, &empty)?.dists;
        ctx.probes.lock().unwrap().insert(size, dists.clone());
        Ok(dists)
    }

    /// Scores one window of a pool: `window` holds canonical candidate
    /// indices in slot order.
    pub fn score_window(
        &self,
        ctx: &QueryContext,
        pool: &Pool,
        permutation: usize,
        window_index: usize,
        window: &[usize],
    ) -> Result<(Vec<ScoreRecord>, Cost)> {
        let texts: Vec<&str> = window
            .iter()
            .map(|&c| pool.candidates[c].text.as_str())
            .collect();
        let read = self.read_window(ctx, &texts)?;
        let probe = match self.cfg.capcal {
            Some(_) => Some(self.probe(ctx, window.len())?),
            None => None,
        };
        let records = window
            .iter()
            .enumerate()
            .map(|(s, &c)| {
                let mut d = read.dists[s];
                if let (Some(alpha), Some(probe)) = (self.cfg.capcal, &probe) {
                    d = d.calibrated(&probe[s], alpha);
                }
                ScoreRecord {
                    qid: pool.qid.clone(),
                    permutation,
                    candidate: pool.candidates[c].id.clone(),
                    window: window_index,
                    slot: s + 1,
                    probs: d.probs,
                    mass: d.mass,
                    score: self.cfg.readout.score(&d),
                }
            })
            .collect();
        Ok((records, read.cost))
    }

    /// The windows of a presentation order.
    pub fn windows(&self, order: &[usize]) -> Vec<Vec<usize>> {
        ocrank_plan::windows(order, self.cfg.width, self.cfg.partition)
    }
}
