"""Prompts that share a prefix, prefilled together in one forward pass over that prefix's cache.

A stepped batch of agent episodes sends 8 prompts of about 2,100 tokens that differ only in their last
20 to 40 (system text and tool schemas first). Run one by one, each prompt's new tokens are a thin matrix
product over every weight of the model; run together they are one product with many rows, which a CPU
computes several times faster per token. The new tokens go in as one sequence, the tokens the prompts
share past the common prefix only once (a prefix tree, so nothing runs twice), and an attention mask
per layer kind lets each token see the common prefix and its own prompt's earlier tokens only (its
ancestors in the tree), within the window of a sliding-window layer.

The model must take such a mask as it is: transformers' models use a 4-D mask given to them unchanged,
and the models with layers of several kinds take one per kind. Whether a model does is checked once on a
probe (:func:`supports_packing`), not assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

PACKED_TOKEN_LIMIT = 1024  # the most new tokens one pass takes: its mask and its wasted attention grow as their square
LAYER_KINDS = ("full_attention", "sliding_attention")


@dataclass
class PackedPrompts:
    """The prompts' tokens past a shared prefix of ``prefix`` tokens, as a prefix tree in creation order
    (a node after its parent): what one forward pass runs."""

    prefix: int
    tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # each token's position in its prompts
    parents: list[int] = field(default_factory=list)  # the node before it in its prompts, -1 for the prefix
    paths: list[list[int]] = field(default_factory=list)  # per prompt, its nodes in order
    _children: list[dict[int, int]] = field(default_factory=list)
    _roots: dict[int, int] = field(default_factory=dict)

    def new_nodes(self, prompt: Sequence[int]) -> int:
        """How many nodes ``prompt`` would add."""
        children = self._roots
        for position in range(self.prefix, len(prompt)):
            node = children.get(prompt[position])
            if node is None:
                return len(prompt) - position
            children = self._children[node]
        return 0

    def add(self, prompt: Sequence[int]) -> None:
        children, parent, path = self._roots, -1, []
        for position in range(self.prefix, len(prompt)):
            token = prompt[position]
            node = children.get(token)
            if node is None:
                node = len(self.tokens)
                children[token] = node
                self.tokens.append(token)
                self.positions.append(position)
                self.parents.append(parent)
                self._children.append({})
            path.append(node)
            parent, children = node, self._children[node]
        self.paths.append(path)


def pack(prompts: Sequence[Sequence[int]], prefix: int, limit: int | None = None) -> list[tuple[list[int], PackedPrompts]]:
    """The prompts (each longer than ``prefix``) in groups of consecutive rows, each group one prefix tree
    of at most ``limit`` nodes (``PACKED_TOKEN_LIMIT``; a prompt longer than that alone): [(rows, tree)]."""
    limit = PACKED_TOKEN_LIMIT if limit is None else limit
    groups: list[tuple[list[int], PackedPrompts]] = []
    for row, prompt in enumerate(prompts):
        if not groups or len(groups[-1][1].tokens) + groups[-1][1].new_nodes(prompt) > limit:
            groups.append(([], PackedPrompts(prefix)))
        rows, tree = groups[-1]
        rows.append(row)
        tree.add(prompt)
    return groups


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens every prompt starts with, leaving each at least one of its own."""
    shortest = min(len(p) for p in prompts) - 1
    length = 0
    first = prompts[0]
    while length < shortest and all(p[length] == first[length] for p in prompts):
        length += 1
    return length


def attention_masks(tree: PackedPrompts, kinds: dict[str, int | None], implementation: str, dtype, device):
    """One mask per layer kind (``kinds``: kind -> sliding window or None) for the tree's tokens over the
    keys its layers give attention: the prefix (its last ``window - 1`` positions for a sliding layer, as
    the cache's layers keep) then the tree's tokens. Boolean for ``sdpa``, additive for ``eager``."""
    import torch

    count = len(tree.tokens)
    ancestors = torch.zeros((count, count), dtype=torch.bool)
    for node, parent in enumerate(tree.parents):
        if parent >= 0:
            ancestors[node] = ancestors[parent]
        ancestors[node, node] = True
    positions = torch.tensor(tree.positions)
    masks = {}
    for kind, window in kinds.items():
        start = 0 if window is None else max(0, tree.prefix - (window - 1))
        prefix_keys = torch.arange(start, tree.prefix)
        seen_prefix = torch.ones((count, tree.prefix - start), dtype=torch.bool)
        seen_tree = ancestors
        if window is not None:
            seen_prefix = positions[:, None] - prefix_keys[None, :] < window
            seen_tree = ancestors & (positions[:, None] - positions[None, :] < window)
        mask = torch.cat([seen_prefix, seen_tree], dim=1)[None, None].to(device)
        if implementation == "eager":
            additive = torch.zeros(mask.shape, dtype=dtype, device=device)
            mask = additive.masked_fill(~mask, torch.finfo(dtype).min)
        masks[kind] = mask
    return masks


def layer_kinds(model) -> dict[str, int | None] | None:
    """The model's attention layer kinds with their windows, where packed masks can be made for it; None
    where they cannot (another attention implementation, another layer kind, a window it applies itself)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if getattr(config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return None
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types is None:
        return None if window is not None else {"full_attention": None}
    if not set(types) <= set(LAYER_KINDS) or ("sliding_attention" in types and not window):
        return None
    return {kind: (window if kind == "sliding_attention" else None) for kind in sorted(set(types))}


def mask_argument(masks: dict[str, Any]):
    """What the model's ``attention_mask`` takes: the one mask of a model of one layer kind (as it was
    given no ``layer_types``), else the mapping kind -> mask."""
    return masks["full_attention"] if list(masks) == ["full_attention"] else masks
