-- POST /json/1.3/registerDevice with a new hwid and push token on every request:
-- hwid "bench-<thread id>-<n>", n = 1, 2, ... per wrk thread.
-- setTags.lua and getTags.lua derive the same names to address registered devices.
-- Note: wrk calls request() once on thread 1 before the run to inspect the request, so
-- bench-1-1 is never sent; the setTags/getTags pool starts at n = 2.
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local headers = { ["Content-Type"] = "application/json" }
-- FCM registration tokens are ~150 characters; keep the body realistically sized.
local filler = string.rep("APA91bHPRgkFLJu6MDp4dLU2xOxkDw9Z", 4)
local n = 0

function request()
   n = n + 1
   local body = string.format(
      '{"request":{"application":"%s","hwid":"bench-%d-%d","device_type":3,' ..
      '"push_token":"%s:%d:%d","language":"en","timezone":3600,' ..
      '"tags":{"Level":%d,"City":"x"}}}',
      app, id, n, filler, id, n, n % 100)
   return wrk.format("POST", "/json/1.3/registerDevice", headers, body)
end
