-- Shared by every wrk script in this folder (loaded with dofile from BENCH_LUA_DIR).
--
-- * setup() numbers the wrk threads 1..N (global `id` in each thread) so that the
--   request scripts can build hwids that are unique across threads.
-- * response() checks every answer: HTTP 200 and a body containing BENCH_EXPECT
--   (default `"status_code":200`). Set BENCH_CHECK=0 to drop the hook entirely, in
--   which case wrk skips parsing headers and bodies.
-- * done() prints one machine-readable line that ops/bench/device-api parses:
--     BENCH rps=.. p50_us=.. p99_us=.. requests=.. bad=.. socket_errors=.. min_thread_responses=..
--   and, when something failed the check, one BENCH_SAMPLE line with the first bad answer.

local threads = {}

function setup(thread)
   threads[#threads + 1] = thread
   thread:set("id", #threads)
end

-- wrk starts each thread right after its setup(), before the next thread's setup(), so a
-- thread's globals must not be touched from setup() afterwards: take the thread count
-- from the environment instead (ops/bench/device-api sets it to wrk's -t).
nthreads = tonumber(os.getenv("BENCH_WRK_THREADS") or "2")

-- The n-th device of the pool registerDevice.lua registered: BENCH_REG_THREADS (wrk threads of
-- the registration run) and BENCH_HWIDS_PER_THREAD (devices known to be registered by each)
-- describe the pool bench-<1..REG_THREADS>-<2..HWIDS_PER_THREAD+1>; the threads of a later run
-- interleave over it. The pool starts at 2: before the run, wrk calls request() once on its first
-- thread to inspect the request (script_verify_request), so bench-1-1 is built but never sent.
local reg_threads = tonumber(os.getenv("BENCH_REG_THREADS") or "2")
local pool = reg_threads * tonumber(os.getenv("BENCH_HWIDS_PER_THREAD") or "5000")

function registered_hwid(n)
   local g = ((n - 1) * nthreads + (id - 1)) % pool
   return string.format("bench-%d-%d", g % reg_threads + 1, math.floor(g / reg_threads) + 2)
end

expect = os.getenv("BENCH_EXPECT") or '"status_code":200'
responses = 0
bad = 0
sample = nil

function response(status, headers, body)
   responses = responses + 1
   if status ~= 200 or not body or not body:find(expect, 1, true) then
      bad = bad + 1
      if sample == nil then
         sample = tostring(status) .. " " .. string.sub(body or "", 1, 300)
      end
   end
end

if os.getenv("BENCH_CHECK") == "0" then
   -- wrk ignores headers and bodies when `response` is nil after init().
   response = nil
end

function done(summary, latency, requests)
   local bad_total, min_responses, first_sample = 0, nil, nil
   for _, t in ipairs(threads) do
      bad_total = bad_total + (t:get("bad") or 0)
      local r = t:get("responses") or 0
      if min_responses == nil or r < min_responses then min_responses = r end
      if first_sample == nil then first_sample = t:get("sample") end
   end
   local e = summary.errors
   local socket_errors = e.connect + e.read + e.write + e.timeout
   io.write(string.format(
      "BENCH rps=%.1f p50_us=%d p99_us=%d requests=%d bad=%d socket_errors=%d http_errors=%d min_thread_responses=%d\n",
      summary.requests / (summary.duration / 1e6),
      latency:percentile(50.0), latency:percentile(99.0),
      summary.requests, bad_total, socket_errors, e.status, min_responses or 0))
   if first_sample ~= nil then
      io.write("BENCH_SAMPLE ", (first_sample:gsub("[\r\n]", " ")), "\n")
   end
end
