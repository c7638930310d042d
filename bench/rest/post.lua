-- post: POST /users with a unique email per request (SQLite write + cache invalidation).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
function scenario_init(args) run_tag = os.time() end
request = post_user
