-- mixed: 70% GET /users/{id}, 10% GET /users (list), 10% POST, 5% PUT, 5% DELETE.
-- Deleted ids answer 404 afterwards: wrk counts those under errors.status.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
-- The driver passes a tag unique to this wrk process (`-- TAG`); the clock is the fallback.
function scenario_init(args) run_tag = tonumber(args[1]) or os.time() end
request = function()
  local r = math.random(1, 100)
  if r <= 70 then return get_user()
  elseif r <= 80 then return get_list()
  elseif r <= 90 then return post_user()
  elseif r <= 95 then return put_user()
  else return delete_user() end
end
