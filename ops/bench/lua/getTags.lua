-- POST /json/1.3/getTags on devices registered by registerDevice.lua
-- (same pool as setTags.lua: see there for BENCH_REG_THREADS / BENCH_HWIDS_PER_THREAD).
-- getTags answers status_code 200 with an empty result for an unknown hwid, so
-- ops/bench/device-api sets BENCH_EXPECT to '"Level":' (a tag every registered device has).
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
      '{"request":{"application":"%s","hwid":"bench-%d-%d"}}',
      app, g % reg_threads + 1, math.floor(g / reg_threads) + 2)
   return wrk.format("POST", "/json/1.3/getTags", headers, body)
end
