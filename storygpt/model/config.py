"""The model's hyper-parameters: :class:`GPTConfig` (what each field does to the model: gpt.py's docstring)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

POSITIONS = ("learned", "rope")
NORMS = ("layernorm", "rmsnorm")
MLPS = ("gelu", "relu2")


#: The logit soft-cap's range (besides 0, off): float32 logits stay finite inside it.
MIN_SOFTCAP, MAX_SOFTCAP = 0.01, 1e4


@dataclass
class GPTConfig:
    """Hyper-parameters of :class:`GPT`; stored in checkpoints as a plain dict.

    Attributes:
        vocab_size: number of token ids (the tokenizer's ``vocab_size``).
        block_size: the longest context (tokens) seen in training; with
            learned positions also the longest context the model accepts.
        n_layer: number of transformer blocks.
        n_head: attention heads per block; must divide ``n_embd``.
        n_embd: width of the residual stream.
        dropout: dropout probability (embeddings, attention, residual), 0-1.
        position: ``"learned"`` or ``"rope"``.
        rope_theta: base of the rotary frequencies, ``theta_i = rope_theta **
            (-2i / head_dim)`` (10000 in RoFormer).
        norm: ``"layernorm"`` (with gain and bias) or ``"rmsnorm"`` (parameter-free).
        qk_norm: RMSNorm (parameter-free) of queries and keys, per head.
        mlp: ``"gelu"`` or ``"relu2"`` (squared ReLU).
        tie_embeddings: the output layer shares ``wte``'s weight.
        zero_init: output projections of attention and MLP, and an untied output layer, start at 0.
        logit_softcap: 0 (off) or ``c`` in [0.01, 10000]: logits become ``c * tanh(logits / c)``.
        bias: biases in the linear layers and LayerNorms.

    A checkpoint written before a field existed lacks it and loads with its default,
    the ``gpt2`` recipe's value.
    """

    vocab_size: int = 256
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    position: str = "learned"
    rope_theta: float = 10000.0
    norm: str = "layernorm"
    qk_norm: bool = False
    mlp: str = "gelu"
    tie_embeddings: bool = True
    zero_init: bool = False
    logit_softcap: float = 0.0
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be a positive integer, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.position not in POSITIONS:
            raise ValueError(f"GPTConfig.position must be one of {POSITIONS}, got {self.position!r}")
        if self.position == "rope" and (self.n_embd // self.n_head) % 2:
            raise ValueError(
                f"GPTConfig: rotary positions need an even head size, got n_embd/n_head = {self.n_embd // self.n_head}"
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not float(self.rope_theta) > 0:
            raise ValueError(f"GPTConfig.rope_theta must be positive, got {self.rope_theta!r}")
        if self.norm not in NORMS:
            raise ValueError(f"GPTConfig.norm must be one of {NORMS}, got {self.norm!r}")
        if self.mlp not in MLPS:
            raise ValueError(f"GPTConfig.mlp must be one of {MLPS}, got {self.mlp!r}")
        for name in ("qk_norm", "tie_embeddings", "zero_init", "bias"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"GPTConfig.{name} must be True or False, got {getattr(self, name)!r}")
        c = float(self.logit_softcap)
        if not (c == 0.0 or MIN_SOFTCAP <= c <= MAX_SOFTCAP):  # outside, float32 logits overflow or turn nan
            raise ValueError(
                f"GPTConfig.logit_softcap must be 0 (off) or from {MIN_SOFTCAP:g} to {MAX_SOFTCAP:g}, "
                f"got {self.logit_softcap!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        """The config as a plain dict (ints, floats, str)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        """Build a config from :meth:`to_dict` output; ValueError on unknown or missing keys."""
        if not isinstance(d, dict):
            raise ValueError(f"GPTConfig.from_dict needs a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"GPTConfig: unknown keys {unknown}")
        return cls(**d)
