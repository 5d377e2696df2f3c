// Types of tern-llm.

/** Every error the package throws; `code` says what kind. */
export class TernError extends Error {
  readonly name: 'TernError';
  readonly code:
    | 'bad_file'
    | 'unsupported'
    | 'too_large'
    | 'invalid_argument'
    | 'invalid_input'
    | 'context_full'
    | 'grammar'
    | 'fetch_failed'
    | 'aborted'
    | 'worker_failed'
    /** The wasm instance running the model trapped and was dropped: load the model again. */
    | 'model_lost'
    | 'error';
}

/** One file: a URL, a file path (Node), bytes, or a Blob/File. */
export type FileSource = string | URL | Uint8Array | ArrayBuffer | ArrayBufferView | Blob;

/**
 * An HF model directory: file names (`config.json`, `model.safetensors` or
 * the shards and `model.safetensors.index.json`, `tokenizer.json`,
 * `tokenizer_config.json`, `generation_config.json`, `chat_template.jinja`)
 * to their sources.
 */
export type ModelFiles = Record<string, FileSource> | Map<string, FileSource>;

/**
 * A GGUF file, or an HF directory as a map of its files (in Node also a
 * directory path), or a string naming a model on the HuggingFace hub
 * (`owner/repo:Q4_K_M`, `owner/repo/file.gguf`, `owner/repo`).
 */
export type ModelSource = FileSource | ModelFiles;

export interface Progress {
  loaded: number;
  /** Undefined when the server sends no length (or, for a file map, a size is not known up front). */
  total?: number;
  /** The file being read, when loading a file map. */
  file?: string;
}

export interface LoadOptions {
  /** Called as bytes arrive. */
  onProgress?: (p: Progress) => void;
  /** Keep a URL's bytes in the Cache API (browsers) and load from there next time. */
  cache?: boolean;
  /** Where hub references (`owner/repo:Q4_K_M`) are resolved (default https://huggingface.co). */
  hubEndpoint?: string;
  signal?: AbortSignal;
  /** KV cache positions (default: the trained context, at most 4096). */
  contextSize?: number;
  /** The f32 path (oracle parity): f32 activations and KV cache. */
  exact?: boolean;
  /** Threads (default: all cores). More than one needs Node or a cross-origin isolated page. */
  threads?: number;
  /** Run in a Worker (default: true where Workers exist). */
  worker?: boolean;
  /**
   * Rewrite weights at load for speed (default: true), with the same
   * numbers, so the same logits bit for bit: Q5_0 matrices as Q8_0 (~1.5×
   * their bytes; SIMD128 goes through bytes faster than it unpacks five-bit
   * quants) and the f16 scales of 32-element blocks widened to f32 beside
   * them (~+20-40 % of those matrices). Skipped when the model would pass 2 GiB.
   */
  widen?: boolean;
}

export interface ModelInfo {
  name: string;
  arch: 'llama' | 'qwen2' | 'qwen3' | string;
  nVocab: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  nFf: number;
  nCtxTrain: number;
  nCtx: number;
  tiedOutput: boolean;
  fileBytes: number;
  /** What `widen` did at load (null if not asked): Q5_0 matrices rewritten as Q8_0, their bytes, bytes of widened scales. */
  widened: { q5_0Matrices: number; q5_0Bytes: number; scaleBytes: number } | null;
  bos: number | null;
  eos: number | null;
  eog: number[];
  addBos: boolean;
  chatTemplate: string | null;
  /** The kernel backend ("simd128"). */
  backend: string;
  exact: boolean;
  threads: number;
  threaded: boolean;
  loadMs: number;
  /** The model came from the Cache API (`cache: true` and an earlier load of the same URL). */
  fromCache: boolean;
  /** Why a `cache: true` download was not kept in the Cache API (e.g. a QuotaExceededError when the disk is full), else null. */
  cacheError: string | null;
}

/** Sampling and stopping, as in the CLI (defaults: llama.cpp's). */
export interface GenerateOptions {
  maxTokens?: number;
  /** 0 = greedy. Default 0.8. */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  typicalP?: number;
  repeatPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  repeatLastN?: number;
  /** DRY (llama.cpp's): 0 = off (default). A token extending a repeat longer
   * than `dryAllowedLength` (2) loses `dryMultiplier × dryBase^(length −
   * allowed)` (base 1.75) of logit, over the last `dryPenaltyLastN` tokens
   * (64; −1: all); `drySequenceBreakers` (`["\n", ":", "\"", "*"]`) end repeats. */
  dryMultiplier?: number;
  dryBase?: number;
  dryAllowedLength?: number;
  dryPenaltyLastN?: number;
  drySequenceBreakers?: string[];
  /** XTC: with this probability (0 = off) drop every token at least
   * `xtcThreshold` (0.1) likely but the least likely of them. */
  xtcProbability?: number;
  xtcThreshold?: number;
  /** The sampler order (llama.cpp's names: `penalties`, `dry`, `top_k`,
   * `typ_p`, `top_p`, `min_p`, `xtc`, `temperature`; that is the default). */
  samplers?: string[];
  /** Generate at least this many tokens (the end tokens held back). */
  minTokens?: number;
  /** The LoRA adapters to run (`loadAdapter`'s ids), each at a scale,
   * their deltas added in this order; without it, each loaded adapter at
   * its default scale. */
  adapters?: { id: number; scale: number }[];
  /** Speculative decoding with prompt-lookup drafts (`"ngram"`): the
   * tokens that followed the last few tokens earlier in the prompt or the
   * output, verified several per forward pass. Greedy output is plain
   * decoding's; sampling keeps its distribution (a seed reproduces a
   * speculative run, not a plain one). Draft models are native only. */
  spec?: 'ngram';
  /** With `spec`: most tokens drafted per step (1–64, default 8). */
  draftMax?: number;
  /** With `spec`: fewest drafted tokens worth verifying (default 0). */
  draftMin?: number;
  /** Default: random (reported in the result). At most 2^53 - 1. */
  seed?: number;
  /** Never emitted; generation ends before them. */
  stop?: string[];
  stopTokens?: number[];
  /** Never sample end-of-generation tokens. */
  ignoreEos?: boolean;
  /** token id → added to its logit (-Infinity or "-Infinity" bans). */
  logitBias?: Record<number, number | '-Infinity'>;
  /**
   * `chat` only: control-token strings typed into messages (`<|im_end|>`…)
   * become control tokens. Default false: they are text, so a message
   * cannot close its turn or open another.
   */
  contentSpecials?: boolean;
  /**
   * The output must match: OpenAI's `{type: 'json_object'}` or
   * `{type: 'json_schema', json_schema: {schema}}` (llguidance computes
   * each step's allowed tokens). A schema that does not compile, or uses a
   * keyword llguidance does not support, is a `grammar` error before any
   * token — unless `strict: false`, which ignores such keywords
   * (`uniqueItems`, `not`, `if`/`then`, unknown formats...) and enforces the rest.
   */
  responseFormat?: { type: 'text' | 'json_object' } | { type: 'json_schema'; json_schema: { name?: string; schema: object; strict?: boolean } };
  /** The output derives from this grammar: llama.cpp's GBNF (`root ::= ...`) or Lark. */
  grammar?: string;
  /** The whole output matches this regular expression. */
  regex?: string;
  /** Report each token's log-probability (the log-softmax of the model's logits) with this many alternatives (0–20). */
  logprobs?: number;
  signal?: AbortSignal;
}

/** A function the model may call (OpenAI's `tools[]` entry). */
export interface Tool {
  type: 'function';
  function: { name: string; description?: string; parameters?: object };
}

/** A call the model made (OpenAI's shape: `arguments` a JSON string). */
export interface ToolCall {
  index: number;
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** `chat`'s options: generation's, and tools. */
export interface ChatOptions extends GenerateOptions {
  /**
   * Functions the model may call, rendered by its chat template and read
   * in the format it asks for (Hermes `<tool_call>` blocks, Llama 3.x JSON,
   * Mistral `[TOOL_CALLS]`; a template without one: JSON calls, the tools
   * described in the system message). The result's `toolCalls` holds the calls.
   */
  tools?: Tool[];
  /**
   * `'auto'` (default): the model may call; `'required'` or
   * `{type: 'function', function: {name}}`: it must, its arguments valid
   * against the function's `parameters` schema (forced by grammar);
   * `'none'`: the tools are not offered.
   */
  toolChoice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
  /** A forced reply may hold several calls (default true). */
  parallelToolCalls?: boolean;
  /** More variables for the chat template, e.g. `{ enable_thinking: false }` (Qwen3). */
  chatTemplateKwargs?: Record<string, unknown>;
  /** OpenAI's `reasoning_effort`, given to templates that read it. */
  reasoningEffort?: 'none' | 'minimal' | 'low' | 'medium' | 'high';
  /**
   * A thinking model's block (`<think>…</think>` where the template has
   * one): `'auto'` (default) apart from the answer (events' `reasoning` and
   * `content`), `'deepseek-legacy'` apart and inline, `'none'` inline only.
   */
  reasoningFormat?: 'none' | 'auto' | 'deepseek' | 'deepseek-legacy';
}

/** A token's log-probability, and the most likely tokens at its step. */
export interface TokenLogprob {
  id: number;
  text: string;
  logprob: number;
  top: { id: number; text: string; logprob: number }[];
}

export interface TokenEvent {
  type: 'token';
  id: number;
  /** The text this token completes (may be empty); deltas concatenate to the result's text. */
  text: string;
  /** With `logprobs`. */
  logprob?: TokenLogprob;
  /** A chat whose template thinks: the thinking block's settled text in this token (else empty). */
  reasoning?: string;
  /** A chat whose template thinks: the answer's settled text in this token. */
  content?: string;
}

export interface GenerationResult {
  type: 'done';
  tokens: number[];
  text: string;
  /** `tool_calls`: a chat with `tools` whose reply called one or more. */
  finishReason: 'stop' | 'length' | 'cancelled' | 'tool_calls';
  usage: {
    promptTokens: number;
    cachedTokens: number;
    completionTokens: number;
    /** Tokens drafted with `spec`, and of those accepted. */
    draftTokens: number;
    acceptedDraftTokens: number;
  };
  timings: {
    prefillMs: number;
    firstTokenMs: number;
    perTokenP50Ms: number;
    perTokenP90Ms: number;
    perTokenP99Ms: number;
    totalMs: number;
    promptTokensPerS: number;
    tokensPerS: number;
  };
  seed: number | null;
  promptIds: number[];
  /** Each token's, with `logprobs` (else empty). */
  logprobs: TokenLogprob[];
  /** A chat with `tools`, or whose template thinks: the reply's answer (outside its calls and thinking block). */
  content?: string;
  /** A chat whose template thinks: the thinking block's text. */
  reasoning?: string;
  /** A chat with `tools`: the reply's calls, in order (none: an empty list). */
  toolCalls?: ToolCall[];
}

/**
 * A message: an assistant's may carry the `tool_calls` it made (content
 * then may be null), a `tool` message answers one by `tool_call_id`.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** A running generation: token events, then the result. */
export class Generation implements AsyncIterable<TokenEvent | GenerationResult> {
  readonly result: Promise<GenerationResult>;
  text(): Promise<string>;
  [Symbol.asyncIterator](): AsyncIterator<TokenEvent | GenerationResult>;
}

export class TernModel {
  info: ModelInfo;
  encode(text: string, options?: { addSpecial?: boolean }): Promise<number[]>;
  decode(ids: ArrayLike<number>): Promise<string>;
  applyChatTemplate(
    messages: ChatMessage[],
    options?: { addGenerationPrompt?: boolean; tools?: Tool[]; toolChoice?: ChatOptions['toolChoice'] },
  ): Promise<string>;
  generate(prompt: string | ArrayLike<number>, options?: GenerateOptions): Generation;
  chat(messages: ChatMessage[], options?: ChatOptions): Generation;
  /** Fill in the code between `prefix` and `suffix` with the model's FIM tokens (an `unsupported` error without them). */
  infill(prefix: string, suffix: string, options?: GenerateOptions): Generation;
  /** Bytes of wasm memory in use (model, KV cache, scratch). */
  memoryBytes(): Promise<number>;
  setContextSize(n: number): Promise<ModelInfo>;
  /** Load a LoRA adapter for this model (a GGUF LoRA file, or a PEFT
   * directory as a map of its two files or, in Node, its path), checked
   * against it; its id. Runs at `scale` (default 0) when a generation's
   * options list no `adapters`. */
  loadAdapter(source: ModelSource, options?: { scale?: number; name?: string }): Promise<number>;
  reset(): Promise<void>;
  dispose(): Promise<void>;
}

export function loadModel(source: ModelSource, options?: LoadOptions): Promise<TernModel>;

export interface EncoderLoadOptions {
  onProgress?: (p: Progress) => void;
  cache?: boolean;
  hubEndpoint?: string;
  signal?: AbortSignal;
  /** Threads (default: all cores). More than one needs Node or a cross-origin isolated page. */
  threads?: number;
  /** How token vectors become one (normalised), instead of as the model's files say: a decoder embedder (Qwen3-Embedding: 'last'). */
  pooling?: 'mean' | 'cls' | 'last';
  /** Run in a Worker (default true where there are Workers) so the calling thread stays free; false: on the calling thread. */
  worker?: boolean;
}

export interface RerankResult {
  /** The document's position in the list given. */
  index: number;
  /** The cross-encoder's logit (higher: more relevant). */
  relevanceScore: number;
}

/** An embedding model or cross-encoder (BERT), or a decoder pooled into one. */
export class TernEncoder {
  /** Width of the vectors. */
  readonly dim: number;
  /** Tokens an input keeps (longer ones are truncated). */
  readonly maxLength: number;
  /** Whether it scores pairs (a cross-encoder) rather than embeds. */
  readonly reranks: boolean;
  /** One vector per text (pooled and normalised as the model says). */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** The documents best first (the best `topN`, if given). */
  rerank(query: string, documents: string[], options?: { topN?: number }): Promise<RerankResult[]>;
  dispose(): void;
}

/**
 * Load an encoder: a `bert` GGUF (URL, path, bytes, Blob), or a
 * sentence-transformers directory as a map of file names to sources (in
 * Node, a directory path too).
 */
export function loadEncoder(source: ModelSource, options?: EncoderLoadOptions): Promise<TernEncoder>;
