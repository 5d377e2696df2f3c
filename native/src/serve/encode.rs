//! Encoder work on the engine thread. The inputs of `/v1/embeddings` and
//! `/v1/rerank` requests wait in a FIFO queue and run between generation
//! steps, one batch of at most `budget` tokens per step (at least one
//! input), so a request of thousands of inputs never stalls the running
//! streams, and the inputs of requests that arrived together (for the same
//! model) share a batch. A row never depends on the batch it ran in
//! (core's batch invariance): a request's answer is the same bits however
//! it was split or joined. A decoder embedder's input (up to the model's
//! whole context) runs a part of at most `budget` tokens per step, as chat
//! prefill does, so even a maximal input leaves the streams their pace.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use tern_core::Engine;
use tern_core::{runtime::Body, runtime::Pair, runtime::Progress};
use tokio::sync::oneshot;

/// What a request gives the encoder, checked and tokenized.
pub enum Inputs {
    /// Texts to embed, as the model's ids.
    Texts(Vec<Vec<u32>>),
    /// (query, document) pairs to score: ids and token types.
    Pairs(Vec<Pair>),
}

impl Inputs {
    fn len(&self) -> usize {
        match self {
            Inputs::Texts(t) => t.len(),
            Inputs::Pairs(p) => p.len(),
        }
    }
    fn tokens(&self, i: usize) -> usize {
        match self {
            Inputs::Texts(t) => t[i].len(),
            Inputs::Pairs(p) => p[i].0.len(),
        }
    }
    fn same_kind(&self, other: &Inputs) -> bool {
        matches!((self, other), (Inputs::Texts(_), Inputs::Texts(_)) | (Inputs::Pairs(_), Inputs::Pairs(_)))
    }
}

/// One row per input, in order: its vector, or its score (one value).
pub type Rows = Vec<Vec<f32>>;

/// A request's encoder work and where its rows go.
pub struct EncodeJob {
    pub model: Arc<crate::Embedder>,
    pub inputs: Inputs,
    pub reply: oneshot::Sender<Result<Rows, String>>,
}

struct Pending {
    job: EncodeJob,
    rows: Rows,
    /// A decoder's input part-way through (the next row's).
    progress: Option<Progress>,
}

/// The queue of encoder jobs, oldest first.
#[derive(Default)]
pub struct Queue {
    jobs: VecDeque<Pending>,
}

impl Queue {
    pub fn push(&mut self, job: EncodeJob) {
        let rows = Vec::with_capacity(job.inputs.len());
        self.jobs.push_back(Pending { job, rows, progress: None });
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Drop the jobs whose clients went away.
    pub fn drop_closed(&mut self) {
        self.jobs.retain(|p| !p.job.reply.is_closed());
    }

    /// End every job with `why`.
    pub fn cancel(&mut self, why: &str) {
        for p in self.jobs.drain(..) {
            let _ = p.job.reply.send(Err(why.to_string()));
        }
    }

    /// Run one batch: the oldest inputs, of the oldest job's model and kind,
    /// up to `budget` tokens (at least one input). Returns the inputs and
    /// tokens it ran (0, 0 if nothing waits).
    pub fn step(&mut self, e: &Engine, budget: usize) -> (usize, usize) {
        let Some(first) = self.jobs.front() else { return (0, 0) };
        let model = first.job.model.clone();
        if let (Inputs::Texts(_), Body::Decoder(_)) = (&first.job.inputs, &model.core().body) {
            return self.step_decoder(e, &model, budget);
        }
        // (job, its inputs in this batch): a prefix of the queue
        let mut take: Vec<(usize, Range<usize>)> = Vec::new();
        let mut tokens = 0;
        'jobs: for (j, p) in self.jobs.iter().enumerate() {
            if !Arc::ptr_eq(&p.job.model, &model) || !p.job.inputs.same_kind(&first.job.inputs) {
                break;
            }
            let start = p.rows.len();
            for i in start..p.job.inputs.len() {
                let n = p.job.inputs.tokens(i);
                if tokens > 0 && tokens + n > budget {
                    if i > start {
                        take.push((j, start..i));
                    }
                    break 'jobs;
                }
                tokens += n;
            }
            take.push((j, start..p.job.inputs.len()));
        }
        let m = model.core();
        let result = match &first.job.inputs {
            Inputs::Texts(_) => {
                let mut batch: Vec<&[u32]> = Vec::new();
                for (j, r) in &take {
                    let Inputs::Texts(t) = &self.jobs[*j].job.inputs else { unreachable!("same kind") };
                    batch.extend(t[r.clone()].iter().map(Vec::as_slice));
                }
                m.embed_ids(e, &batch)
            }
            Inputs::Pairs(_) => {
                let mut batch: Vec<Pair> = Vec::new();
                for (j, r) in &take {
                    let Inputs::Pairs(p) = &self.jobs[*j].job.inputs else { unreachable!("same kind") };
                    batch.extend_from_slice(&p[r.clone()]);
                }
                m.score(e, &batch).map(|s| s.into_iter().map(|x| vec![x]).collect())
            }
        };
        let ran = take.iter().map(|(_, r)| r.len()).sum();
        match result {
            Ok(rows) => {
                let mut rows = rows.into_iter();
                for (j, r) in &take {
                    self.jobs[*j].rows.extend(rows.by_ref().take(r.len()));
                }
                while self.jobs.front().is_some_and(|p| p.rows.len() == p.job.inputs.len()) {
                    let p = self.jobs.pop_front().expect("front exists");
                    let _ = p.job.reply.send(Ok(p.rows));
                }
            }
            Err(err) => {
                for p in self.jobs.drain(..take.len()) {
                    let _ = p.job.reply.send(Err(err.to_string()));
                }
            }
        }
        (ran, tokens)
    }

    /// A decoder embedder's step: the oldest inputs of `model`, each alone
    /// through the decoder, a part at a time, until `budget` tokens ran.
    /// The inputs finished and the tokens run.
    fn step_decoder(&mut self, e: &Engine, model: &crate::Embedder, budget: usize) -> (usize, usize) {
        let core = model.core();
        let Body::Decoder(dec) = &core.body else { return (0, 0) };
        let (mut finished, mut tokens) = (0, 0);
        while tokens < budget {
            let Some(p) = self.jobs.front_mut() else { break };
            let Inputs::Texts(texts) = &p.job.inputs else { break };
            if !std::ptr::eq(p.job.model.as_ref(), model) {
                break;
            }
            let ids = &texts[p.rows.len()];
            let step = match p.progress.take() {
                Some(prog) => Ok(prog),
                None => dec.start(ids, core.max_len),
            }
            .and_then(|mut prog| {
                let before = prog.done();
                let v = dec.advance(e, ids, &mut prog, budget - tokens)?;
                tokens += prog.done() - before;
                Ok((v, prog))
            });
            match step {
                Ok((Some(v), _)) => {
                    p.rows.push(v);
                    finished += 1;
                    if p.rows.len() == texts.len() {
                        let p = self.jobs.pop_front().expect("front exists");
                        let _ = p.job.reply.send(Ok(p.rows));
                    }
                }
                Ok((None, prog)) => p.progress = Some(prog),
                Err(err) => {
                    let p = self.jobs.pop_front().expect("front exists");
                    let _ = p.job.reply.send(Err(err.to_string()));
                }
            }
        }
        (finished, tokens)
    }
}
