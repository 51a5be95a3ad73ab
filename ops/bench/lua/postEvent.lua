-- POST /json/1.3/postEvent: a PW_ScreenOpen event for hwid "bench-<thread>-<n % 10000>",
-- screen "Screen<n % 20>", timestamps = now. Used by ops/bench/events.
-- Beside common.lua's BENCH line, done() prints
--   BENCH_EVENTS sent=.. ok=..
-- sent = requests handed to wrk (request() calls, minus the one wrk makes on thread 1 to
-- inspect the script before the run); ok = answers that passed the check. Every answer
-- that passed is a report Herald committed; the requests still in flight when wrk stopped
-- (sent - answered) may also have been committed.
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local headers = { ["Content-Type"] = "application/json" }
n = 0

-- common.lua keeps its thread list local; keep our own for done().
local event_threads = {}
local common_setup = setup
function setup(thread)
   common_setup(thread)
   event_threads[#event_threads + 1] = thread
end

function request()
   n = n + 1
   local now = os.time()
   local body = string.format(
      '{"request":{"application":"%s","hwid":"bench-%d-%d","device_type":1,' ..
      '"event":"PW_ScreenOpen","attributes":{"screen_name":"Screen%d","device_type":"1"},' ..
      '"timestampUTC":%d,"timestampCurrent":%d}}',
      app, id, n % 10000, n % 20, now, now)
   return wrk.format("POST", "/json/1.3/postEvent", headers, body)
end

local common_done = done

function done(summary, latency, requests)
   common_done(summary, latency, requests)
   local sent, ok = 0, 0
   for i, t in ipairs(event_threads) do
      local calls = t:get("n") or 0
      if i == 1 then calls = calls - 1 end
      sent = sent + calls
      ok = ok + (t:get("responses") or 0) - (t:get("bad") or 0)
   end
   io.write(string.format("BENCH_EVENTS sent=%d ok=%d\n", sent, ok))
end
