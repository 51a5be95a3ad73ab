-- Bare reference: wrk's static GET / with no request() or response() hook.
-- Only done() is added (it runs once, after the measurement).
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
response = nil
