-- POST /json/1.3/getTags on devices registered by registerDevice.lua (see registered_hwid in
-- common.lua). getTags answers status_code 200 with an empty result for an unknown hwid, so
-- ops/bench/device-api sets BENCH_EXPECT to '"Level":' (a tag every registered device has).
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local headers = { ["Content-Type"] = "application/json" }
local n = 0

function request()
   n = n + 1
   local body = string.format('{"request":{"application":"%s","hwid":"%s"}}', app, registered_hwid(n))
   return wrk.format("POST", "/json/1.3/getTags", headers, body)
end
