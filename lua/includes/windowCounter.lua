--[[
  A sliding-window counter for one limit of one bucket, held in one HASH:
    n   tokens still counted
    lo  lowest release index that may still hold tokens
    hi  highest release index holding tokens (the key expires when it is released)
    <k> tokens that stop counting at time k * slot (a release index)

  A token granted at g with lease h is filed under k = ceil((g + W + h) / slot): it is released at or after
  g + W + h, never before, so the count only errs on the safe side. With slot = W / SLOTS_PER_WINDOW,
  a saturated bucket sustains at least N / (W + h + slot), and the hash holds at most (W + h) / slot + 4 fields
  whatever N is.
  The including script defines `local rcall = redis.call`.
]]
local SLOTS_PER_WINDOW = 110
-- Past this many empty indices a sweep reads the whole hash instead of walking index by index.
local WALK_LIMIT = 48

local function slotUsFor(windowMs)
  local slotMs = math.floor(windowMs / SLOTS_PER_WINDOW)
  if slotMs < 1 then slotMs = 1 end
  return slotMs * 1000
end

local function releaseIndex(counter, grantUs, leaseMs)
  return math.ceil((grantUs + (counter.windowMs + leaseMs) * 1000) / counter.slot)
end

-- Drops every release index <= due (released by now), keeping n in step.
local function sweepCounter(counter, nowUs)
  local due = math.floor(nowUs / counter.slot)
  if counter.lo == nil or counter.lo > due then return end
  local key = counter.key
  if counter.hi <= due then
    rcall('DEL', key)
    counter.n, counter.lo, counter.hi = 0, nil, nil
    return
  end
  local removed = {}
  if due - counter.lo > WALK_LIMIT then
    local flat = rcall('HGETALL', key)
    for i = 1, #flat, 2 do
      local k = tonumber(flat[i])
      if k and k <= due then
        counter.n = counter.n - tonumber(flat[i + 1])
        removed[#removed + 1] = flat[i]
      end
    end
  else
    for k = counter.lo, due do
      local count = rcall('HGET', key, k)
      if count then
        counter.n = counter.n - tonumber(count)
        removed[#removed + 1] = k
      end
    end
  end
  if #removed > 0 then rcall('HDEL', key, unpack(removed)) end
  counter.lo = due + 1
  counter.dirty = true
end

local function loadCounter(key, max, windowMs, nowUs)
  local stored = rcall('HMGET', key, 'n', 'lo', 'hi')
  local counter = {
    key = key, max = max, windowMs = windowMs, slot = slotUsFor(windowMs),
    n = tonumber(stored[1]) or 0, lo = tonumber(stored[2]), hi = tonumber(stored[3]),
    added = {}, dirty = false,
  }
  sweepCounter(counter, nowUs)
  return counter
end

local function addToken(counter, k)
  counter.added[k] = (counter.added[k] or 0) + 1
  counter.n = counter.n + 1
  if counter.lo == nil or k < counter.lo then counter.lo = k end
  if counter.hi == nil or k > counter.hi then counter.hi = k end
  counter.dirty = true
end

-- The earliest time (us) at which the counter holds at most max - 1 tokens, given what is counted now.
local function roomAtUs(counter)
  local excess = counter.n - counter.max + 1
  if excess <= 0 then return 0 end
  local counts = {}
  local flat = rcall('HGETALL', counter.key)
  for i = 1, #flat, 2 do
    local k = tonumber(flat[i])
    if k and flat[i] ~= 'n' and flat[i] ~= 'lo' and flat[i] ~= 'hi' then counts[k] = tonumber(flat[i + 1]) end
  end
  for k, c in pairs(counter.added) do counts[k] = (counts[k] or 0) + c end
  local order = {}
  for k in pairs(counts) do order[#order + 1] = k end
  table.sort(order)
  local released = 0
  for _, k in ipairs(order) do
    released = released + counts[k]
    if released >= excess then return k * counter.slot end
  end
  return counter.hi * counter.slot
end

local function saveCounter(counter)
  if not counter.dirty then return end
  local key = counter.key
  if counter.n <= 0 then
    rcall('DEL', key)
    return
  end
  for k, c in pairs(counter.added) do rcall('HINCRBY', key, k, c) end
  rcall('HSET', key, 'n', counter.n, 'lo', counter.lo, 'hi', counter.hi)
  rcall('PEXPIREAT', key, math.ceil(counter.hi * counter.slot / 1000))
end
