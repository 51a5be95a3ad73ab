-- POST /json/1.3/setTags on devices registered by registerDevice.lua (see registered_hwid in
-- common.lua).
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local headers = { ["Content-Type"] = "application/json" }
local n = 0

function request()
   n = n + 1
   local body = string.format(
      '{"request":{"application":"%s","hwid":"%s","tags":{"Level":%d,"Score":%d}}}',
      app, registered_hwid(n), n % 100, n)
   return wrk.format("POST", "/json/1.3/setTags", headers, body)
end
