-- Seeds exactly BENCH_DEVICES devices through POST /json/1.3/registerDevice (used by
-- ops/bench/campaign). Device g (0 .. N-1) gets:
--   hwid        "camp-<g>"
--   device_type 1 (iOS) when g is even, else 3 (Android)
--   push_token  64 hex characters (iOS) or an FCM-sized ~160-character token (Android)
--   tags        Level = g % 100 (integer), City = {"Paris","Lyon","Rome"}[floor(g / 100) % 3]
-- so `Level GTE 25 AND City NOTEQ Rome` matches 75% x 2/3 = 50% of the devices (the
-- benchmark computes the exact expected count with SQL, independently of this formula).
--
-- wrk thread t (1..T) registers g = t-1, t-1+T, t-1+2T, ... (< N), so the T threads
-- together cover 0..N-1 exactly once. A thread that has sent its share switches to
-- GET /healthz with a 1 s delay() between requests, so it costs almost nothing while the
-- others finish; the benchmark watches the device count and stops wrk.
--
-- wrk calls request() once on thread 1 before the run to inspect it (script_verify_request)
-- and never sends that request; thread 1 therefore discards its first call.
local app = os.getenv("BENCH_APP") or "BENCH-00001"
local total = tonumber(os.getenv("BENCH_DEVICES") or "1000")
local nthreads = tonumber(os.getenv("BENCH_WRK_THREADS") or "2")
local headers = { ["Content-Type"] = "application/json" }
local cities = { "Paris", "Lyon", "Rome" }
local fcm_filler = string.rep("APA91bHPRgkFLJu6MDp4dLU2xOxkDw9Z", 4)

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
   local body
   if g % 2 == 0 then
      body = string.format(
         '{"request":{"application":"%s","hwid":"camp-%d","device_type":1,' ..
         '"push_token":"%064x","language":"en","timezone":3600,' ..
         '"tags":{"Level":%d,"City":"%s"}}}',
         app, g, g, g % 100, cities[math.floor(g / 100) % 3 + 1])
   else
      body = string.format(
         '{"request":{"application":"%s","hwid":"camp-%d","device_type":3,' ..
         '"push_token":"%s:camp-%d","language":"en","timezone":3600,' ..
         '"tags":{"Level":%d,"City":"%s"}}}',
         app, g, fcm_filler, g, g % 100, cities[math.floor(g / 100) % 3 + 1])
   end
   return wrk.format("POST", "/json/1.3/registerDevice", headers, body)
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
