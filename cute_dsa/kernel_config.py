"""Static configuration of the decode kernel. Frozen and hashable: it is the compile-cache key."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

TILINGS = ("heads_m", "tokens_m")
GATHERS = ("cp_async", "ld_global")
SCORES = ("split", "one")
LOAD_GROUP_TOKENS = 16  # tokens per register set of the ld_global producer (four 16-byte loads a thread)
MAX_FUSED_SPLIT = 4096  # positions a decode resolving its own ids takes at most
RESOLVE_BYTES_PER_POSITION = 12  # its shared-memory table: two 4-byte slots and the 4-byte id
# A decode resolving its ids window by window keeps a bitmap of this many tokens (8 KB): caches whose
# rows address more (max_blocks x block_size) keep the resolve launch.
STREAM_RESOLVE_TOKENS = 65536
CONVERTS = ("producer", "consumer", "registers")
TOKENS_M_HEAD_TILES = (8, 16, 32)  # heads per CTA with tokens as M: the wgmma N
GATHER_TOKENS_TOKENS_M = 32  # tokens per gather stage with tokens as M (two per 64-token K/V tile)


@dataclass(frozen=True)
class DecodeKernelConfig:
    # "heads_m": heads are the wgmma M dimension (64-row tiles, padded); "tokens_m": a chunk of 64
    # tokens is M and the heads are N (8, 16 or 32), for small head counts.
    tiling: str = "heads_m"
    head_tile: int = 64  # heads per CTA: wgmma M (heads_m) or N (tokens_m)
    chunk_tokens: int = 32  # selected tokens per K/V tile (heads_m: the QK^T N; tokens_m: M, 64)
    # Defaults: the config that won or came within 2% in most buckets of the H200 sweep
    # (benchmarks/runs/2026-12-03-tune.jsonl); the analytical fallback uses it for every shape.
    stages: int = 2  # depth of the raw FP8 gather ring (tokens_m: stages of 32 tokens)
    kv_buffers: int = 2  # converted 16-bit K/V tiles; 3 lets the conversion run ahead of the MMAs
    # How the producer gathers, heads as M: "cp_async" (16-byte copies into a raw FP8 ring, then
    # converted into the K/V tile) or "ld_global" (16-byte loads into registers, `stages` sets of
    # 16 tokens in flight, converted and stored straight into the K/V tile: no raw ring, which
    # frees the shared memory for 64-token tiles and halves the producer's shared-memory traffic).
    gather: str = "cp_async"
    # Heads as M: who computes the scores. "split": each consumer over its half of the dims, the
    # partial scores exchanged through shared memory. "one": consumer 0 over all 512 dims; it
    # shares P (and the rescale factors) with consumer 1 through shared memory (FlashMLA's split).
    scores: str = "split"
    # Who turns FP8 into FP16: "producer" (into the K/V tiles, handed over per tile) or, tokens as M
    # only, "consumer" (the producer only gathers; each consumer converts its own chunk) or
    # "registers" (the consumers convert raw rows straight into wgmma A fragments: no K/V tiles).
    convert: str = "producer"
    overlap: bool = False  # issue QK of chunk c+1 before PV of chunk c (softmax hides under PV)
    q_in_regs: bool = False  # Q as the register A operand of QK (read from smem once, not per chunk)
    # Register-fed only: read the chunk's V^T rows into registers right after QK and hand the ring
    # slot back before the softmax, so the producer refills it a softmax + PV earlier.
    release_early: bool = False
    id_window: int = 128  # 0: each chunk's row ids are loaded one chunk ahead; W: W ids at a time, a window ahead
    # Heads as M over two head tiles (65-128 heads): the two CTAs of a row's split form a cluster;
    # each gathers and converts half of every K/V tile and stores it into both CTAs' tiles
    # (st.async into the peer), so the 128 heads pay for one gather and conversion, not two.
    pair: bool = False
    # With an id window: in the middle of each window, each producer thread asks L2 for the rows of
    # the next window (cp.async.bulk.prefetch.L2, 512 bytes, no register held), so its loads or
    # copies, whose rows in flight bound the gather, wait on L2 and not on HBM.
    l2_prefetch: bool = False
    max_splits: int = 64  # split-KV cap; the launch picks splits <= this

    def validate(self) -> "DecodeKernelConfig":
        if self.tiling not in TILINGS:
            raise ValueError(f"tiling={self.tiling!r}: expected one of {TILINGS}")
        if self.convert not in CONVERTS:
            raise ValueError(f"convert={self.convert!r}: expected one of {CONVERTS}")
        if self.convert != "producer" and self.tiling != "tokens_m":
            raise ValueError(f"convert={self.convert!r}: only with tiling 'tokens_m'")
        if self.release_early and self.convert != "registers":
            raise ValueError(f"release_early=True: only with convert='registers' (convert={self.convert!r})")
        if self.gather not in GATHERS:
            raise ValueError(f"gather={self.gather!r}: expected one of {GATHERS}")
        if self.scores not in SCORES:
            raise ValueError(f"scores={self.scores!r}: expected one of {SCORES}")
        if self.tiling == "tokens_m" and (self.gather, self.scores) != ("cp_async", "split"):
            raise ValueError(f"gather={self.gather!r}, scores={self.scores!r}: tiling 'tokens_m' takes gather='cp_async', scores='split'")
        if self.gather == "ld_global" and not 2 <= self.stages <= self.max_load_sets():
            raise ValueError(
                f"stages={self.stages}: gather='ld_global' keeps 2..{self.max_load_sets()} register sets of "
                f"{LOAD_GROUP_TOKENS} tokens in flight (producer registers, scores={self.scores!r})"
            )
        if self.pair and (self.tiling, self.gather, self.scores, self.chunk_tokens) != ("heads_m", "ld_global", "one", 64):
            raise ValueError(f"{self}: pair=True takes tiling='heads_m', gather='ld_global', scores='one', chunk_tokens=64")
        if self.pair and not self.id_window:
            raise ValueError(f"{self}: pair=True takes an id window (id_window=128 or 256)")
        if self.l2_prefetch and not self.id_window:
            raise ValueError(f"{self}: l2_prefetch=True takes an id window (id_window=128 or 256): the rows it prefetches are the next window's")
        if self.scores == "one" and self.q_in_regs:
            raise ValueError(f"{self}: scores='one' takes q_in_regs=False")
        if self.tiling == "heads_m":
            if self.head_tile != 64:
                raise ValueError(f"head_tile={self.head_tile}: expected 64 for tiling 'heads_m'")
            if self.chunk_tokens not in (16, 32, 48, 64):
                raise ValueError(f"chunk_tokens={self.chunk_tokens}: expected 16, 32, 48 or 64")
            if self.chunk_tokens == 48 and (self.gather, self.scores) != ("ld_global", "one"):
                # 48 tokens: three K/V tiles next to Q with neither a raw ring nor a score exchange.
                raise ValueError("chunk_tokens=48: only with gather='ld_global', scores='one'")
        else:
            if self.head_tile not in TOKENS_M_HEAD_TILES:
                raise ValueError(f"head_tile={self.head_tile}: expected one of {TOKENS_M_HEAD_TILES} for tiling 'tokens_m'")
            if self.chunk_tokens != 64:
                raise ValueError(f"chunk_tokens={self.chunk_tokens}: expected 64 for tiling 'tokens_m' (the wgmma M)")
            if self.stages > (6 if self.convert == "registers" else 4):
                raise ValueError(f"stages={self.stages}: expected 2..4 for tiling 'tokens_m' (6 with convert='registers')")
            if self.convert == "consumer" and self.stages != 4:
                raise ValueError(f"stages={self.stages}: convert='consumer' takes stages=4 (two ring slots per consumer)")
            if self.convert == "registers" and self.stages not in (4, 6):
                raise ValueError(f"stages={self.stages}: convert='registers' takes stages=4 or 6 (two or three ring slots per consumer)")
            if self.release_early and self.head_tile > 16:
                raise ValueError(f"head_tile={self.head_tile}: release_early takes 8 or 16 heads (the held rows next to a 32-head O^T spill)")
            if self.convert == "registers" and self.stages == 6 and self.id_window:
                raise ValueError(f"id_window={self.id_window}: six ring slots take id_window=0 (named barrier ids)")
            if self.kv_buffers != 2 or self.overlap or self.q_in_regs:
                raise ValueError(
                    f"{self}: tiling 'tokens_m' takes kv_buffers=2 (one per consumer), overlap=False, q_in_regs=False"
                )
        if not 2 <= self.stages <= 8:
            raise ValueError(f"stages={self.stages}: expected 2..8")
        if self.kv_buffers not in (2, 3):
            raise ValueError(f"kv_buffers={self.kv_buffers}: expected 2 or 3")
        if self.id_window not in (0, 128, 256):
            raise ValueError(f"id_window={self.id_window}: expected 0, 128 or 256 (whole loads for the 128 producer threads)")
        if self.id_window % self.gather_tokens():
            raise ValueError(f"id_window={self.id_window}: expected a multiple of {self.gather_tokens()} (tokens per gather stage)")
        if not 1 <= self.max_splits <= MAX_SPLITS:
            raise ValueError(f"max_splits={self.max_splits}: expected 1..{MAX_SPLITS} (the combine kernel's threads)")
        if self.q_in_regs and self.overlap and self.chunk_tokens > 16:
            # Q (64) + O (128) + two chunks of scores/P exceed the 240 registers a consumer thread
            # can get next to the producer; ptxas spills (measured with ptxas -v, sm_90a).
            raise ValueError(
                f"{self}: q_in_regs with overlap needs chunk_tokens <= 16 (consumer registers)"
            )
        if self.smem_bytes() > SMEM_LIMIT:
            raise ValueError(
                f"{self}: needs {self.smem_bytes()} bytes of shared memory, more than the {SMEM_LIMIT} an H100/H200 CTA gets"
            )
        return self

    def max_load_sets(self) -> int:
        """Register sets the ld_global producer can keep in flight: 16 registers each, next to the
        addressing, in the 72 (scores 'split') or 120 (scores 'one') registers it gets; with one
        scorer a fifth and sixth set take their registers from the scorer (a sixth next to the
        overlap's two score tiles spills). Its loop is unrolled over whole sets and tiles, so 3 or 4
        sets over 32-token tiles (2 groups) unroll 6 or 4 groups with constant addressing each,
        which spills (ptxas, sm_90a): 2 there."""
        if self.pair:
            # Its st.async stores into the peer take the registers of a fourth set, and with the
            # overlap (its scorer holds two score tiles) of a third (ptxas spills).
            return 2 if self.overlap else 3
        if self.scores == "one" and self.chunk_tokens >= 48:
            return 5 if self.overlap else 6
        return 2

    def gather_tokens(self) -> int:
        """Tokens per stage of the raw gather ring (ld_global: per register set)."""
        if self.gather == "ld_global":
            return LOAD_GROUP_TOKENS
        if self.tiling == "tokens_m":
            # Register-fed consumers read a whole chunk from one ring slot.
            return self.chunk_tokens if self.convert == "registers" else GATHER_TOKENS_TOKENS_M
        return self.chunk_tokens

    def resolve_scratch_bytes(self) -> int:
        """Shared memory a producer that resolves its own ids borrows before its first hand-over:
        the FP16 K/V tiles (ld_global) or the raw ring."""
        if self.gather == "ld_global":
            return self.kv_buffers * self.chunk_tokens * 512 * 2
        return self.stages * self.gather_tokens() * 512

    def fused_resolve_max_split(self) -> int:
        """The longest split whose ids the decode can resolve itself: a power of two of at most
        MAX_FUSED_SPLIT positions whose table (two slots per position) and ids fit the scratch."""
        p = MAX_FUSED_SPLIT
        while p * RESOLVE_BYTES_PER_POSITION > self.resolve_scratch_bytes():
            p //= 2
        return p

    def stream_resolve_bytes(self) -> int:
        """Shared memory of the window-by-window resolve (kernels/stream_resolve.py): two hash
        tables of 2 x id_window keys and positions, the token bitmap and the next window's ids."""
        return 4 * (9 * self.id_window + STREAM_RESOLVE_TOKENS // 32)

    def can_stream_resolve(self) -> bool:
        """The producer can resolve its ids window by window: it has id windows, and shared memory
        for the tables and the bitmap next to everything else."""
        return self.id_window > 0 and not self.pair and self.smem_bytes() + self.stream_resolve_bytes() <= SMEM_LIMIT

    def smem_bytes(self) -> int:
        q = self.head_tile * 512 * 2
        k = self.kv_buffers * self.chunk_tokens * 512 * 2  # the 16-bit K/V tiles
        if self.convert == "registers":
            k = 0  # none: the raw ring slots also hold the end-of-loop merge
        raw = 0 if self.gather == "ld_global" else self.stages * self.gather_tokens() * 512
        if self.scores == "one":
            xchg = 2 * self.head_tile * self.chunk_tokens * 2 + 2 * self.head_tile * 4 + self.head_tile * 4  # P, rescale factors, 1/sum
        elif self.tiling == "heads_m":
            xchg = 2 * 2 * self.head_tile * self.chunk_tokens * 4  # fp32 partial scores, per consumer, per buffer
        else:  # P^T per consumer, the column reductions and per-head statistics
            xchg = 2 * self.head_tile * self.chunk_tokens * 2 + self.head_tile * 4 * 2 * 4 + self.head_tile * 2 * 2 * 4
        valid = self.kv_buffers * self.chunk_tokens * 4 + (0 if self.gather == "ld_global" else self.stages * self.gather_tokens() * 4)  # per K/V buffer and per ring stage
        ids = 2 * max(self.id_window, 1) * 4  # two windows of row ids
        return q + k + raw + xchg + valid + ids + 1024  # + alignment slack

    def label(self) -> str:
        """Short name used in tables and logs, e.g. 'n32 st2 kv2 w128' (+ ' ov', ' qr'); tokens as M:
        't16 st3 w128' (16 heads per CTA)."""
        if self.tiling == "tokens_m":
            return f"t{self.head_tile} st{self.stages} w{self.id_window}" + "".join(" " + t for t in self.tags())
        return f"n{self.chunk_tokens} st{self.stages} kv{self.kv_buffers} w{self.id_window}" + "".join(" " + t for t in self.tags())

    def tags(self) -> list:
        """Short tags of the non-default switches, in labels and variant names: 'ov' overlap, 'qr'
        Q in registers, 'cc' consumers convert, 'rf' register-fed, 're' release_early, 'lg' ld_global
        gather, 's1' one consumer scores, 'p2' two head tiles share the gather (pair), 'pf' the next id
        window's rows prefetched into L2."""
        conv = {"producer": None, "consumer": "cc", "registers": "rf"}[self.convert]
        flags = [(self.overlap, "ov"), (self.q_in_regs, "qr"), (conv is not None, conv), (self.release_early, "re"),
                 (self.gather == "ld_global", "lg"), (self.scores == "one", "s1"), (self.pair, "p2"), (self.l2_prefetch, "pf")]
        return [t for on, t in flags if on]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "DecodeKernelConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"config keys {sorted(unknown)}: not fields of DecodeKernelConfig ({sorted(names)})")
        return replace(cls(), **d)


SMEM_LIMIT = 227 * 1024
MAX_SPLITS = 128


@dataclass(frozen=True)
class DecodeVariant:
    """Everything that selects one compiled decode kernel."""

    config: DecodeKernelConfig
    split: bool  # write fp32 partials for the combine kernel instead of the final output
    write_lse: bool
    k_scale_on_device: bool
    v_scale_on_device: bool
    # The cache's blocks are back to back (stride(0) == block_size * stride(1)): it is passed as
    # (rows, token_bytes) and a row id addresses its row without a division by block_size.
    flat_cache: bool = False
    # Ablation (`cute-dsa ablate` only; the result is wrong): "" runs everything, "gather" skips the
    # global loads (ids and rows), "ids" only the id loads (rows at pseudo-random addresses instead),
    # "convert" the FP8 -> FP16 conversion, "mma" every wgmma.
    drop: str = ""
    # The producer resolves its own slice of the selection (ids -> rows, duplicates dropped) before
    # it gathers, instead of a separate resolve launch: for splits of at most
    # DecodeKernelConfig.fused_resolve_max_split() positions (the launch plan decides).
    fused_resolve: bool = False
    # The producer resolves its ids one id window ahead of its gather (any split length; caches of at
    # most STREAM_RESOLVE_TOKENS addressable tokens; DecodeKernelConfig.can_stream_resolve()).
    stream_resolve: bool = False
    # The ids are physical cache rows already (`dsa_decode(physical_indices=True)`, FlashMLA's
    # contract): no resolve at all. The producer drops ids outside [0, cache rows) so a bad id never
    # reads outside the cache, and the launch is not a programmatic dependent (no resolve kernel
    # precedes it: Q and the ids may come from the kernel just before).
    physical_ids: bool = False

    @property
    def prefetches_l2(self) -> bool:
        """Whether the producer prefetches the next id window's rows into L2 (`l2_prefetch`): not
        with the streamed resolve, whose pending registers hold block-table entries, not row ids.
        The one place this rule lives: the kernels and the PTX promise (`decode_kind`) read it."""
        return self.config.l2_prefetch and self.config.id_window > 0 and not self.stream_resolve
