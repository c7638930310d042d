-- post: POST /users with a unique email per request (SQLite write + cache invalidation).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
-- The driver passes a tag unique to this wrk process (`-- TAG`); the clock is the fallback.
function scenario_init(args) run_tag = tonumber(args[1]) or os.time() end
request = post_user
