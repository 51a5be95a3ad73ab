-- Seeds exactly BENCH_DEVICES devices of one platform through POST /json/1.3/registerDevice (used
-- by ops/bench/apns; the loop, checks and SEED line are in seed.lua). Device g (0 .. N-1) gets:
--   hwid        "<BENCH_PREFIX>-<g>"
--   BENCH_PLATFORM "ios" (default): device_type 1 (iOS), gateway "production", a push token of
--               64 hex characters;
--   BENCH_PLATFORM "android": device_type 3 (Android), a push token "fcm:" and 148 hex characters (84 zeros, then 64);
--   either way the token is made of BENCH_TOKEN_BASE + g, so two apps seeded with different bases
--   get different tokens
-- and no tags.
dofile(os.getenv("BENCH_LUA_DIR") .. "/seed.lua")

local app = os.getenv("BENCH_APP") or "APNS-00001"
local prefix = os.getenv("BENCH_PREFIX") or "ios"
local base = tonumber(os.getenv("BENCH_TOKEN_BASE") or "0")
local android = os.getenv("BENCH_PLATFORM") == "android"

function registration(g)
   if android then
      return string.format(
         '{"request":{"application":"%s","hwid":"%s-%d","device_type":3,' ..
         '"push_token":"fcm:%s%064x","language":"en","timezone":3600}}',
         app, prefix, g, string.rep("0", 84), base + g)
   end
   return string.format(
      '{"request":{"application":"%s","hwid":"%s-%d","device_type":1,' ..
      '"push_token":"%064x","gateway":"production","language":"en","timezone":3600}}',
      app, prefix, g, base + g)
end
