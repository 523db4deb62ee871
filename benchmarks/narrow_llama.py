"""The narrow Llamas of the compile and first-call benchmarks (``regional_steady.py``,
``train_first_step.py``, ``host_cost.py``): a Llama's structure at a small width, vocab 1024,
intermediate 4 x hidden, half as many key-value heads as heads."""

import transformers


def narrow_llama_config(hidden: int, layers: int, head_dim: int = 64, **extra) -> transformers.LlamaConfig:
    """A Llama config of ``layers`` layers of width ``hidden`` in heads of ``head_dim``;
    ``extra``: more config fields (token ids)."""
    heads = max(1, hidden // head_dim)
    return transformers.LlamaConfig(
        vocab_size=1024,
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        **extra,
    )
