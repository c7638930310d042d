-- get_single: GET /users/{id} with a uniformly random seeded id per request (cache-aside).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
request = get_user
