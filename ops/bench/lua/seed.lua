-- Shared by seedDevices.lua and seedIosDevices.lua (loaded with dofile from BENCH_LUA_DIR): they
-- define registration(g), the registerDevice body of device g; this file does the rest.
--
-- Seeds exactly BENCH_DEVICES devices g = 0 .. N-1. wrk thread t (1..T) registers g = t-1,
-- t-1+T, t-1+2T, ... (< N), so the T threads together cover 0..N-1 exactly once. A thread that
-- has sent its share switches to GET /healthz with a 1 s delay() between requests, so it costs
-- almost nothing while the others finish; the benchmark watches the device count and stops wrk.
--
-- wrk calls request() once on thread 1 before the run to inspect it (script_verify_request)
-- and never sends that request; thread 1 therefore discards its first call.
--
-- done() prints `SEED requests=.. bad=.. socket_errors=.. http_errors=..` and, when an answer was
-- not HTTP 200 with status_code 200 (or healthz ok), one SEED_SAMPLE line with the first of them.
local total = tonumber(os.getenv("BENCH_DEVICES") or "1000")
local nthreads = tonumber(os.getenv("BENCH_WRK_THREADS") or "2")
local headers = { ["Content-Type"] = "application/json" }

local threads = {}
function setup(thread)
   threads[#threads + 1] = thread
   thread:set("id", #threads)
end

local calls = 0
local finished = false
responses = 0
bad = 0
sample = nil

function request()
   calls = calls + 1
   local k = calls - 1
   if id == 1 then k = calls - 2 end -- the first call on thread 1 is the unsent probe
   if k < 0 then k = 0 end
   local g = k * nthreads + (id - 1)
   if g >= total then
      finished = true
      return wrk.format("GET", "/healthz")
   end
   return wrk.format("POST", "/json/1.3/registerDevice", headers, registration(g))
end

function delay()
   if finished then return 1000 end
   return 0
end

function response(status, headers, body)
   responses = responses + 1
   local ok = status == 200 and body ~= nil and
      (body:find('"status_code":200', 1, true) or body:find('"status":"ok"', 1, true))
   if not ok then
      bad = bad + 1
      if sample == nil then sample = tostring(status) .. " " .. string.sub(body or "", 1, 300) end
   end
end

function done(summary, latency, requests)
   local bad_total, first_sample = 0, nil
   for _, t in ipairs(threads) do
      bad_total = bad_total + (t:get("bad") or 0)
      if first_sample == nil then first_sample = t:get("sample") end
   end
   local e = summary.errors
   io.write(string.format("SEED requests=%d bad=%d socket_errors=%d http_errors=%d\n",
      summary.requests, bad_total, e.connect + e.read + e.write + e.timeout, e.status))
   if first_sample ~= nil then
      io.write("SEED_SAMPLE ", (first_sample:gsub("[\r\n]", " ")), "\n")
   end
end
