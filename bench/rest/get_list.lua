-- get_list: GET /users?page=P&limit=20 with a random page (SQLite only, never cached).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
request = get_list
