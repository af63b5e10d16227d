--[[
  The window kind (limit(N, W)): a bucket's window counters (includes/windowCounter), one per window limit,
  in the limits' order, are its counters' array part, and a throttle's window limits the limits' array part.
  A window limit is the limits hash's field W (ms, spelled as lua/publishLimits-n.lua wrote it) -> N; the
  whole throttle's override writes its windows there too (includes/limitOverrides), and a key's override is
  merged in per bucket by includes/bucketCounters, which reads the merged windows through readField as well.
  windowKind holds the functions every kind has (includes/bucketCounters' header lists them). Its own
  include, apart from the counter's: reading limits needs includes/schedulerKeys (the counter keys), which
  the scripts that hold lone counters by key (grants, returns, the queues' histories) do without.
  Fields, not locals: the delivery scripts' main chunk is near Lua's 200 locals.
  loaded: every window counter loaded in this run, saved by save.
]]
--- @include "schedulerKeys"
--- @include "windowCounter"
local windowKind = { loaded = {} }

-- A window field (W -> N) into limits' array part: true when the field is one. The counter key of bucket b is
-- keyHead .. b .. keyTail (schedulerKeys' counterKeyParts, once per limit, not per bucket).
function windowKind.readField(field, value, limits)
  local windowMs = tonumber(field)
  if not windowMs then return false end
  local keyHead, keyTail = counterKeyParts(limits.base, field)
  limits[#limits + 1] = { windowMs = windowMs, max = tonumber(value), keyHead = keyHead, keyTail = keyTail }
  return true
end

-- Whether the throttle has a window limit (every field read: nothing is left to finish).
function windowKind.readDone(limits)
  return #limits > 0
end

-- Loads the bucket's window counters into counters.
function windowKind.load(limits, bucket, nowUs, counters)
  local loaded = windowKind.loaded
  for _, limit in ipairs(limits) do
    -- A bucket's counters are loaded once per script (bucketCache), so each key is loaded once.
    local counter = loadCounter(limit.keyHead .. bucket.bucket .. limit.keyTail, limit.max, limit.windowMs, nowUs)
    -- Lets saveCounter keep the throttle's :active and :full indexes (includes/throttleStats).
    counter.statsBase, counter.bucket = limits.base, bucket.bucket
    loaded[#loaded + 1] = counter
    counters[#counters + 1] = counter
  end
end

-- The lower of room (nil: none yet) and the tokens the bucket's windows could still grant now (swept first).
function windowKind.room(counters, room)
  for _, counter in ipairs(counters) do
    if not counter.swept then sweepCounter(counter, counter.nowUs) end
    local left = counter.max - counter.n
    if room == nil or left < room then room = left end
  end
  return room
end

-- The later of at and when every window has room for `cost` more (us); lookAgainUs for a cost over a window's N.
function windowKind.roomAtUs(counters, cost, at, lookAgainUs)
  for i = 1, #counters do
    local counter = counters[i]
    -- Below its limit by its stored count, a counter has room (roomAtUs would say so too, at more cost).
    if counter.n + cost > counter.max then
      local roomAt
      if cost > counter.max then roomAt = lookAgainUs else roomAt = roomAtUs(counter, cost) end
      if roomAt > at then at = roomAt end
    end
  end
  return at
end

-- The later of at and when `units` more could have gone through every window, one grant after another with none
-- between (us): each window's room for the first of them, then N each window after (an estimate for a backlog,
-- includes/deadlines; never later than the windows allow).
function windowKind.waitAtUs(counters, units, at)
  for i = 1, #counters do
    local counter = counters[i]
    local windows = math.floor((units - 1) / counter.max)
    local rest = units - windows * counter.max
    local first = roomAtUs(counter, rest)
    if first == 0 then first = counter.nowUs end
    local done = first + windows * counter.g.windowMs * 1000
    if done > at then at = done end
  end
  return at
end

-- Counts `count` tokens granted now with lease leaseMs in every window of the bucket.
function windowKind.add(counters, count, leaseMs)
  for _, counter in ipairs(counters) do addTokens(counter, count, leaseMs) end
end

-- Stops counting, in every window of the bucket, up to `count` tokens granted at grantUs with lease leaseMs
-- (never spent): the most any window still counted (and now does not). Each window takes back its own:
-- the windows that already released them have nothing to take.
function windowKind.giveBack(counters, grantUs, leaseMs, nowUs, count)
  local stopped = 0
  for _, counter in ipairs(counters) do
    local removed = removeTokens(counter, grantUs, leaseMs, nowUs, count)
    if removed > stopped then stopped = removed end
  end
  return stopped
end

-- Writes every window counter loaded in this run.
function windowKind.save()
  for _, counter in ipairs(windowKind.loaded) do saveCounter(counter) end
end
