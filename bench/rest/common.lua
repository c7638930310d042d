-- Shared by the scenario scripts (loaded with dofile from the script's own folder).
-- Gives each wrk thread its own random stream and a thread number, and prints one JSON
-- line of results at the end (requests, errors, non-2xx/3xx, latency percentiles in µs).

local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

function init(args)
  -- tid is set by setup() before init() runs in the thread.
  math.randomseed(42 * 1000 + (tid or 0))
  if scenario_init then scenario_init(args) end
end

function done(summary, latency, requests)
  local e = summary.errors
  local function p(q) return latency:percentile(q) end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"rps":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"p50":%.1f,"p90":%.1f,"p97_5":%.1f,"p99":%.1f,"p99_9":%.1f,"max":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    summary.requests / (summary.duration / 1e6),
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, p(50), p(90), p(97.5), p(99), p(99.9), latency.max))
end

-- Helpers for the scenarios.
USERS = 10000

function get_user()
  return wrk.format("GET", "/users/" .. math.random(1, USERS))
end

function get_list()
  return wrk.format("GET", "/users?page=" .. math.random(1, USERS / 20) .. "&limit=20")
end

local posted = 0
-- Unique per thread, per request and per wrk process (run_tag, see post.lua).
function post_user()
  posted = posted + 1
  local email = string.format("wrk-%d-%d-%d@example.org", run_tag or 0, tid or 0, posted)
  local body = string.format('{"name":"Load Test %d","email":"%s","bio":"created by wrk"}',
    posted, email)
  return wrk.format("POST", "/users", {["Content-Type"] = "application/json"}, body)
end

function put_user()
  local body = string.format('{"bio":"updated %d"}', math.random(1, 1000000))
  return wrk.format("PUT", "/users/" .. math.random(1, USERS),
    {["Content-Type"] = "application/json"}, body)
end

function delete_user()
  return wrk.format("DELETE", "/users/" .. math.random(1, USERS))
end
