-- The Lua side of redline's scripting sandbox, run once when the engine starts.
-- Receives the engine's private state table; everything scripts see afterwards is
-- reached through read-only proxies, as Redis 7.0 makes its globals read-only.
local state = ...
local dbg = debug
debug = nil
loadfile = nil
dofile = nil
print = nil
local rawget, rawset, error, type, tostring, setmetatable = rawget, rawset, error, type, tostring, setmetatable

-- The text of an error a Rust function raised (mlua's userdata): without mlua's
-- prefix and traceback, and without the \3 that says it names its place already.
-- Bytes a Rust string cannot hold came as \4 and two hex digits (`args::c_text`).
local char, tonumber = string.char, tonumber
local function raw_byte(hex) return char(tonumber(hex, 16)) end
local function rust_message(text)
  text = text:gsub('\nstack traceback:.*$', ''):gsub('^runtime error: ', '')
  if text:find('\4', 1, true) then text = text:gsub('\4(%x%x)', raw_byte) end
  local located = text:sub(1, 1) == '\3'
  if located then text = text:sub(2) end
  return text, located
end

-- What a script sees of a Rust library function's error (mlua's userdata): the string
-- a C library raises, or the Redis text between \1 markers when there is one.
local function rust_error_text(e)
  local text = rust_message(tostring(e))
  return text:match('\1(.-)\1') or text
end

-- Redis's error handler: errors become {err=...} tables carrying where they happened
-- (the first frame that is neither C nor this prelude).
function state.handler(err)
  local level = 2
  local info = dbg.getinfo(level, 'nSl')
  while info and (info.what == 'C' or info.source == '=redline') do
    level = level + 1
    info = dbg.getinfo(level, 'nSl')
  end
  if type(err) ~= 'table' then
    -- Errors the engine raises from Rust (userdata, never a script's string) carry
    -- their Redis text between markers: \2 when the error statistics counted it
    -- already (a command's error reply).
    local text = tostring(err)
    local rust = type(err) == 'userdata'
    local marked = rust and text:match('\1(.-)\1')
    local counted = rust and text:match('\2(.-)\2')
    if marked then
      err = {err = marked}
    elseif counted then
      err = {err = counted, ignore_error_stats_update = true}
    elseif rust then
      -- A library function written in Rust failed (bit, cjson, cmsgpack, struct):
      -- keep its message, without mlua's prefix and traceback. It says where the
      -- script called it (after a \3) as luaL_error does; one that does not is given
      -- the script's place.
      local located
      text, located = rust_message(text)
      local where = ''
      if not located and info then where = info.short_src .. ':' .. info.currentline .. ': ' end
      err = {err = 'ERR ' .. where .. text}
    else
      err = {err = 'ERR ' .. text}
    end
  end
  if info then
    err['source'] = info.source
    err['line'] = info.currentline
  end
  return err
end

-- KEYS and ARGV of an EVAL are globals, made for each run by state.run_args (the run's
-- keys and arguments, from the engine).
local run_globals = state.globals
function state.run(f)
  local keys, args = state.run_args()
  rawset(run_globals, 'KEYS', keys)
  rawset(run_globals, 'ARGV', args)
  return xpcall(f, state.handler)
end

-- The Lua debugger's view of the stack, called from its line hook (which adds no frame):
-- level 0 is the function the hook stopped in, two frames below these functions.
function state.ldb_getlocal(level, i)
  if not dbg.getinfo(level + 2, 'l') then return false end
  return true, dbg.getlocal(level + 2, i)
end
function state.ldb_frame(level)
  local info = dbg.getinfo(level + 2, 'Snl')
  if not info then return nil end
  return info.short_src, info.name, info.currentline
end

-- Read-only proxies: empty tables whose metatable reads from the real table and refuses
-- writes (Redis's read-only tables, which its Lua marks inside the VM).
local protected = setmetatable({}, {__mode = 'k'})
-- The table behind each proxy, for the raw functions (next, pairs, rawget) to read.
local real_of = setmetatable({}, {__mode = 'k'})
-- What getmetatable shows of a read-only table: none (Redis's read-only tables have
-- no metatable) but for the globals', which holds the missing-global error.
local shown_meta = setmetatable({}, {__mode = 'k'})
local raw_setmetatable = setmetatable
local function readonly_error() error('Attempt to modify a readonly table', 2) end
local sealed_meta = raw_setmetatable({}, {__newindex = readonly_error, __metatable = false})
local function readonly(real)
  local proxy = raw_setmetatable({}, {
    __index = real,
    __newindex = readonly_error,
    __metatable = sealed_meta,
  })
  protected[proxy] = true
  real_of[proxy] = real
  return proxy
end
state.readonly = readonly
-- rawset, setmetatable and table.insert refuse a proxy, rawget, next and pairs see
-- through one, getmetatable shows what Redis's table would have: C functions over these
-- tables and the library's own (`readonly.rs`), made before anything here replaces them.
local guards = state.guards(protected, real_of, shown_meta)
setmetatable = guards.setmetatable
-- The environments code runs in: EVAL's and each library's. A chunk a script loads
-- gets the one of the nearest Lua code that called the loader (through pcall, say): a
-- function's sees what functions see, as in Redis, where they have a Lua state of their
-- own. Never the interpreter's own globals (a C function's environment).
local chunk_envs = setmetatable({}, {__mode = 'k'})
local function loaded_chunk_env()
  -- From level 3: the caller of loadstring or load (1 is this, 2 the loader).
  for level = 3, 12 do
    local info = dbg.getinfo(level, 'f')
    if not info then break end
    local env = getfenv(info.func)
    if chunk_envs[env] then return env end
  end
  return state.env
end
-- Precompiled (binary) chunks are read as source text, as Redis's Lua (which has no
-- loader for them) reads them: a space before the escape byte that starts one makes
-- the parser refuse it as Redis's does.
-- The arguments are checked in C first (`loaders.rs`), as Lua's own functions check
-- them: code a string or number, reader a function, name absent, nil or a string.
local raw_loadstring = loadstring
loadstring = state.checked_loadstring(function(code, name)
  if code:sub(1, 1) == '\27' then
    return raw_loadstring(' ' .. code, name or code)
  end
  local f, err = raw_loadstring(code, name)
  if f and state.env then setfenv(f, loaded_chunk_env()) end
  return f, err
end)
-- load(reader [, name]): the same, for code a function hands over in pieces.
local raw_load = load
local safe_load = state.checked_load(function(reader, name)
  local first = true
  local function pieces()
    local piece = reader()
    if first and type(piece) == 'string' and piece ~= '' then
      first = false
      if piece:sub(1, 1) == '\27' then piece = ' ' .. piece end
    end
    return piece
  end
  local f, err = raw_load(pieces, name or '=(load)')
  if f and state.env then setfenv(f, loaded_chunk_env()) end
  return f, err
end)

-- The library's own raw functions, for the prelude itself (scripts get the guards).
local raw_rawset, raw_rawget, raw_next = rawset, rawget, next

-- The engine's compiler reports through this: Lua's message with its bytes.
function state.syntax_error(code, name)
  local _, err = raw_loadstring(code, name)
  return err
end

-- Redis 7.0's pcall: redis.call raises an {err=...} table, and pcall gives scripts its
-- text instead, as older versions raised a string.
local raw_pcall = pcall
local function pcall_result(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == 'table' then
    local msg = e.err
    if type(msg) == 'string' or type(msg) == 'number' then e = msg end
  elseif type(e) == 'userdata' then
    e = rust_error_text(e)
  end
  return false, e
end
-- With nothing to call, Redis's pcall calls its own result placeholder, a boolean.
pcall = function(...)
  if select('#', ...) == 0 then return false, 'attempt to call a boolean value' end
  return pcall_result(raw_pcall(...))
end

local redis = state.redis
-- redis.call, redis.pcall and redis.acl_check_cmd are set by the engine after this
-- (Rust functions: being C functions they keep the script's frame, so errors point at
-- the script's line), and so are redis.setresp and redis.set_repl.
-- Wrong arguments give an error table back, not an error raised: Redis's behaviour.
redis.error_reply = function(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  -- As Redis reads it: a C string (up to a NUL), `-CODE text` or `text` (code ERR),
  -- line breaks trimmed off both ends of the text.
  msg = msg:match('^[^%z]*')
  if msg:sub(1, 1) == '-' then msg = msg:sub(2) end
  local code, text = 'ERR', msg
  local space = msg:find(' ', 1, true)
  if space then code, text = msg:sub(1, space - 1), msg:sub(space + 1) end
  text = (text:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', ''))
  return {err = code .. ' ' .. text}
end
redis.status_reply = function(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = msg}
end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.REPL_NONE = 0
redis.REPL_AOF = 1
redis.REPL_SLAVE = 2
redis.REPL_REPLICA = 2
redis.REPL_ALL = 3
redis.LOG_DEBUG = 0
redis.LOG_VERBOSE = 1
redis.LOG_NOTICE = 2
redis.LOG_WARNING = 3

-- The globals scripts see: everything set up so far, read-only; reading a missing name
-- is an error, as in Redis.
local G = state.globals
-- Not getfenv/setfenv (a C function's environment is the interpreter's own global
-- table, behind every proxy) nor newproxy: redis-server 7.0.15 as Debian ships it
-- (with the fixes for CVE-2025-46818) has none of them either.
local withheld = {_G = true, getfenv = true, setfenv = true, newproxy = true}
for k, v in raw_next, _G do
  if not withheld[k] then raw_rawset(G, k, v) end
end
-- Level 3: blame the script line that read the global, not the __index function.
local function missing_global(k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
end
-- Redis's error handler, a global of EVAL's (scripts may call it or give it to xpcall):
-- the error as an {err=...} table, with the place of the first caller not in C.
raw_rawset(G, '__redis__err__handler', function(err)
  local i = dbg.getinfo(2, 'nSl')
  if i and i.what == 'C' then i = dbg.getinfo(3, 'nSl') end
  if type(err) == 'userdata' then
    err = {err = 'ERR ' .. rust_error_text(err)}
  elseif type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end)
for _, lib in ipairs({'redis', 'string', 'table', 'math', 'bit', 'cjson', 'cmsgpack', 'struct', 'coroutine'}) do
  if raw_rawget(G, lib) ~= nil then
    raw_rawset(G, lib, readonly(raw_rawget(G, lib), lib))
  end
end
-- Strings' metatable: getmetatable('') gives a read-only view of it, and its __index
-- is the string library's proxy, so no script reaches a table the others use.
local string_meta = getmetatable('')
string_meta.__index = raw_rawget(G, 'string')
string_meta.__metatable = readonly(string_meta)
-- Reads go from the (empty) proxy to G as a table, which the VM follows without calling
-- anything; only a name G lacks reaches a function, which raises the error. (An
-- __index function on the proxy itself ran Lua code on every global a script read.)
-- Written in C (scripts reach it as getmetatable(_G).__index, and may call it with
-- anything, in tail position too).
raw_setmetatable(G, {__index = state.protected_table_error})
local proxy = raw_setmetatable({}, {
  __index = G,
  __newindex = readonly_error,
  __metatable = sealed_meta,
})
protected[proxy] = true
raw_rawset(G, '_G', proxy)
real_of[proxy] = G
-- Redis's globals have a metatable of their own, read-only, holding the missing-global
-- error; so do a function's, which share G's.
local globals_meta = readonly(dbg.getmetatable(G))
shown_meta[proxy] = globals_meta
for name, f in raw_next, {
  setmetatable = setmetatable, getmetatable = guards.getmetatable,
  loadstring = loadstring, load = safe_load,
  rawset = guards.rawset, rawget = guards.rawget, next = guards.next, pairs = guards.pairs,
} do
  raw_rawset(G, name, f)
end
state.env = proxy
chunk_envs[proxy] = true


-- FUNCTION LOAD: library code runs in its own environment where `redis` is the
-- load-time API (register_function) while loading and the full API when called.
local load_fields = {
  register_function = function(...)
    local register = state.register
    if register == nil then
      error({err = 'ERR redis.register_function can only be called on FUNCTION LOAD command'})
    end
    return register(...)
  end,
  log = function(...) return redis.log(...) end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}
-- While a library loads, `redis` offers only the fields above and the globals nothing
-- else: anything else is a missing global, as in Redis 7.0.
local function strict(fields)
  local view = setmetatable({}, {
    __index = function(_, k)
      local v = fields[k]
      if v == nil then
        missing_global(k)
      end
      return v
    end,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
    __metatable = false,
  })
  -- Read-only to rawset, setmetatable and table.insert as well.
  protected[view] = true
  return view
end
local load_api = strict(load_fields)
local load_globals = {}
local library_metas = setmetatable({}, {__mode = 'k'})
-- FCALL's functions see the same globals but for EVAL's: neither the error handler nor
-- the KEYS and ARGV an EVAL sets (Redis runs functions in a Lua state of their own),
-- and a `redis` without the debugger's functions or replicate_commands. A copy made at
-- the first library's load (the engine has set `redis`'s Rust fields by then; a server
-- that never loads one does not hold it), behind a proxy of its own.
local EVAL_ONLY = {__redis__err__handler = true, KEYS = true, ARGV = true}
local REDIS_EVAL_ONLY = {breakpoint = true, debug = true, replicate_commands = true}
local function_G
local function functions_globals()
  local globals = {}
  for k, v in raw_next, G do
    if not EVAL_ONLY[k] then raw_rawset(globals, k, v) end
  end
  local view = {}
  for k, v in raw_next, real_of[raw_rawget(G, 'redis')] do
    if not REDIS_EVAL_ONLY[k] then raw_rawset(view, k, v) end
  end
  raw_rawset(globals, 'redis', readonly(view))
  local proxy = readonly(globals)
  shown_meta[proxy] = globals_meta
  raw_rawset(globals, '_G', proxy)
  return raw_setmetatable(globals, dbg.getmetatable(G))
end
function state.library_env()
  function_G = function_G or functions_globals()
  local meta = {
    __index = function(_, k)
      if state.loading then
        if k == 'redis' then return load_api end
        local v = load_globals[k]
        if v == nil then
          missing_global(k)
        end
        return v
      end
      local v = rawget(function_G, k)
      if v == nil then
        missing_global(k)
      end
      return v
    end,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
    __metatable = false,
  }
  local env = setmetatable({}, meta)
  library_metas[env] = meta
  chunk_envs[env] = true
  return env
end
-- Once its library has loaded, an environment reads globals straight from function_G
-- (a table the VM follows without running Lua code, see the script environment above).
function state.library_loaded(env)
  local meta = library_metas[env]
  if meta then
    meta.__index = function_G
    library_metas[env] = nil
  end
end

-- Lua 5.1's xpcall passes no arguments, so a function runs through one trampoline that
-- reads them from these locals (rather than a new closure per call). Functions cannot
-- call FCALL, so runs never nest; the locals are cleared after each.
local pending_f, pending_keys, pending_args
local function trampoline()
  return pending_f(pending_keys, pending_args)
end
local function finish_function(...)
  pending_f, pending_keys, pending_args = nil, nil, nil
  return ...
end
function state.run_function(f)
  pending_f = f
  pending_keys, pending_args = state.run_args()
  return finish_function(xpcall(trampoline, state.handler))
end
