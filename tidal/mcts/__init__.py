"""Batched MuZero tree search over a learned model; it knows no policy, only a `recurrent_fn`."""
from tidal.mcts.min_max import MinMaxStats
from tidal.mcts.search import (RecurrentFn, SearchConfig, SearchError, SearchResult, expand_root, search, simulate,
                               visit_policy)
from tidal.mcts.tree import Tree

__all__ = ['MinMaxStats', 'RecurrentFn', 'SearchConfig', 'SearchError', 'SearchResult', 'Tree', 'expand_root',
           'search', 'simulate', 'visit_policy']
