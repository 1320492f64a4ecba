import sys, runpy, json, time, os, statistics
sys.argv=['x']
ns = runpy.run_path('bench/assembly.py', run_name='bench')
data = json.load(open('../shared/data/tau-bench-gpt-4o-airline.json'))
msgs = ns['build_run'](data, 5000)
config = {"model_input_limit": 100_000 + ns['RESERVE']}
import compaction.context.assembly.assembler as A
import compaction.tokens as T
acc = {}
def wrap(mod, name):
    f = getattr(mod, name)
    def w(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: acc[name] = acc.get(name, 0) + time.perf_counter() - t
    setattr(mod, name, w)
for n in ["parse", "validate", "build_ledger", "compact_tool_loop", "split_units", "assign_buckets", "trim", "render_messages", "prefix_hash", "_bucket_summary"]:
    wrap(A, n)
import compaction.context.assembly.counting as C
orig = T.count_tokens
N=20
def cold():
    ns['clear_caches']()
    t=time.perf_counter(); ns['assemble'](format="openai", messages=msgs, config=config); return time.perf_counter()-t
cold(); acc.clear()
ts=[cold() for _ in range(N)]
print("total p50 %.1f" % (1000*statistics.median(ts)))
for k,v in sorted(acc.items(), key=lambda x:-x[1]): print(f"{k:20s} {1000*v/N:6.2f} ms")
