-- Seeds exactly BENCH_DEVICES devices through POST /json/1.3/registerDevice (used by
-- ops/bench/campaign; the loop, checks and SEED line are in seed.lua). Device g (0 .. N-1) gets:
--   hwid        "camp-<g>"
--   device_type 1 (iOS) when g is even, else 3 (Android)
--   push_token  64 hex characters (iOS) or an FCM-sized ~160-character token (Android)
--   tags        Level = g % 100 (integer), City = {"Paris","Lyon","Rome"}[floor(g / 100) % 3]
-- so `Level GTE 25 AND City NOTEQ Rome` matches 75% x 2/3 = 50% of the devices (the
-- benchmark computes the exact expected count with SQL, independently of this formula).
dofile(os.getenv("BENCH_LUA_DIR") .. "/seed.lua")

local app = os.getenv("BENCH_APP") or "BENCH-00001"
local cities = { "Paris", "Lyon", "Rome" }
local fcm_filler = string.rep("APA91bHPRgkFLJu6MDp4dLU2xOxkDw9Z", 4)

function registration(g)
   if g % 2 == 0 then
      return string.format(
         '{"request":{"application":"%s","hwid":"camp-%d","device_type":1,' ..
         '"push_token":"%064x","language":"en","timezone":3600,' ..
         '"tags":{"Level":%d,"City":"%s"}}}',
         app, g, g, g % 100, cities[math.floor(g / 100) % 3 + 1])
   end
   return string.format(
      '{"request":{"application":"%s","hwid":"camp-%d","device_type":3,' ..
      '"push_token":"%s:camp-%d","language":"en","timezone":3600,' ..
      '"tags":{"Level":%d,"City":"%s"}}}',
      app, g, fcm_filler, g, g % 100, cities[math.floor(g / 100) % 3 + 1])
end
