"""torch._dynamo.utils.counters: what tensorplug.compile did, by kind (`graph_break` reasons with
their counts, `stats`: captures, unique_graphs, recompiles, cache_limit_eager_calls)."""
import collections

counters: collections.defaultdict = collections.defaultdict(collections.Counter)
