-- POST /json/1.3/setTags on devices registered by registerDevice.lua.
-- BENCH_REG_THREADS (wrk threads of the registration run) and BENCH_HWIDS_PER_THREAD
-- (devices known to be registered by each of them) describe the pool
-- bench-<1..REG_THREADS>-<2..HWIDS_PER_THREAD+1>; the threads here interleave over it.
-- The pool starts at n = 2: before the run, wrk calls request() once on its first thread to
-- inspect the request (script_verify_request), so bench-1-1 is built but never sent.
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local reg_threads = tonumber(os.getenv("BENCH_REG_THREADS") or "2")
local per_thread = tonumber(os.getenv("BENCH_HWIDS_PER_THREAD") or "5000")
local pool = reg_threads * per_thread
local headers = { ["Content-Type"] = "application/json" }
local n = 0

function request()
   n = n + 1
   local g = ((n - 1) * nthreads + (id - 1)) % pool
   local body = string.format(
      '{"request":{"application":"%s","hwid":"bench-%d-%d","tags":{"Level":%d,"Score":%d}}}',
      app, g % reg_threads + 1, math.floor(g / reg_threads) + 2, n % 100, n)
   return wrk.format("POST", "/json/1.3/setTags", headers, body)
end
