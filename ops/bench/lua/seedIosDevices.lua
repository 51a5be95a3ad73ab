-- Seeds exactly BENCH_DEVICES iOS devices through POST /json/1.3/registerDevice (used by
-- ops/bench/apns; the loop, checks and SEED line are in seed.lua). Device g (0 .. N-1) gets:
--   hwid        "<BENCH_PREFIX>-<g>"
--   device_type 1 (iOS), gateway "production"
--   push_token  64 hex characters: BENCH_TOKEN_BASE + g, so two apps seeded with different
--               bases get different tokens
-- and no tags.
dofile(os.getenv("BENCH_LUA_DIR") .. "/seed.lua")

local app = os.getenv("BENCH_APP") or "APNS-00001"
local prefix = os.getenv("BENCH_PREFIX") or "ios"
local base = tonumber(os.getenv("BENCH_TOKEN_BASE") or "0")

function registration(g)
   return string.format(
      '{"request":{"application":"%s","hwid":"%s-%d","device_type":1,' ..
      '"push_token":"%064x","gateway":"production","language":"en","timezone":3600}}',
      app, prefix, g, base + g)
end
