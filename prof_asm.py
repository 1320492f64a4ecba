import sys, runpy, json, cProfile, pstats, time
sys.argv=['x']
ns = runpy.run_path('bench/assembly.py', run_name='bench')
data = json.load(open('../shared/data/tau-bench-gpt-4o-airline.json'))
trajs = data if isinstance(data, list) else data.get("trajectories", data)
msgs = ns['build_run'](trajs, 5000)
config = {"model_input_limit": 100_000 + ns['RESERVE']}
mode = sys.argv[1] if len(sys.argv) > 1 else "cold"
import os
mode = os.environ.get("MODE", "cold")
def once():
    if mode == "cold": ns['clear_caches']()
    ns['assemble'](format="openai", messages=msgs, config=config)
once(); once()
pr = cProfile.Profile()
for _ in range(10):
    if mode == "cold": ns['clear_caches']()
    pr.enable(); ns['assemble'](format="openai", messages=msgs, config=config); pr.disable()
st = pstats.Stats(pr); st.sort_stats(os.environ.get("SORT","tottime")).print_stats(int(os.environ.get("N","25")))
