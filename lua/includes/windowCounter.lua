--[[
  A sliding-window counter for one limit of one bucket, held in one HASH:
    h   "n lo hi x", one field so that a delivery reads and writes it in one go:
        n   tokens still counted
        lo  lowest slot index that may still hold tokens
        hi  highest slot index holding tokens (the key expires once that slot is released)
        x   the slot whose end the key's expiry is set to: EXPIRY_SLACK slots past hi when hi passes it, so
            that a bucket taking a token every few slots moves its expiry once in a while, not every time
    <k> the tokens whose release times fall in slot k, that is in ((k - 1) * slot, k * slot] us, stored as
        count * scale + o, where (k - 1) * slot + o * step us is the latest release time among them
  A slot is about W / SLOTS_PER_WINDOW long, in whole steps of about a thousandth of a slot (1 us for any W
  up to 220 ms, 5 us for 1 s), so a token is released within a step of its own release time at worst,
  however short W: a token is counted until g + W, not until the ms after it (which, at 100 per 100 ms,
  alone would cost 1% of the rate). src/grant/windowGeometry.ts states the same geometry for the readers in
  TypeScript; test/windowGeometry.property.test.ts holds the two together.

  Released slots are swept lazily: a stored n may still include released tokens, which only ever makes
  it look fuller, so a counter with n < N has room without looking further; one that looks full is swept
  before it refuses anything. Once a window a counter is swept anyway, so that the released slots it
  holds never outnumber a window's worth.

  A token granted at g with lease h is released at r = g + W + h. Its slot releases all its tokens at the
  latest r among them, never before any of them, so a count only ever errs on the safe side, and by less
  than one slot (W / SLOTS_PER_WINDOW) at worst; tokens granted together (the usual case under a backlog)
  are released almost exactly on time. The hash holds at most (W + h) / slot + 4 fields whatever N is.
  A counter with a statsBase keeps its throttle's :active and :full indexes (includes/bucketIndexes).
  The window kind (windowKind: a bucket's window counters as includes/bucketCounters goes over them) is
  includes/windowKind; scripts that hold lone counters by key (grants, returns, the queues' histories) call
  the functions below themselves.
  The including script defines `local rcall = redis.call`.
]]
--- @include "intArg"
--- @include "bucketIndexes"
-- What other scripts call. The rest is local to the block below: a script's main chunk holds at most 200
-- locals, and the delivery scripts, with bullmq's includes, come close to that.
local slotOf, loadCounter, sweepCounter, hasRoomFor, addTokens, addTokensReleasedAt, slotsInOrder, roomAtUs, removeTokens, saveCounter
do
local addToken
local SLOTS_PER_WINDOW = 220
-- A quarter window: a bucket's key outlives its last token by at most W / 4 (it holds nothing by then).
local EXPIRY_SLACK = SLOTS_PER_WINDOW / 4
-- A sweep walks slot by slot over a short span, and reads the whole hash when that is cheaper.
local WALK_LIMIT = 4

-- A slot's length in us (a whole number of steps), and its step, shared by the counters of one window.
local STEPS_PER_SLOT = 1000
local geometries = {}
local function slotGeometry(windowMs)
  local geometry = geometries[windowMs]
  if geometry then return geometry end
  local raw = math.floor(windowMs * 1000 / SLOTS_PER_WINDOW)
  if raw < 1 then raw = 1 end
  local step = math.ceil(raw / STEPS_PER_SLOT)
  local slot = math.floor(raw / step) * step
  geometry = { windowMs = windowMs, slot = slot, step = step, scale = slot / step + 1 }
  geometries[windowMs] = geometry
  return geometry
end

-- Every field in one constructor, so that the table is sized once: 16 fields fit a table of 16 slots (17
-- would take 32). One is built per bucket a delivery draws from, and Lua's collector sweeps them all.
-- Tokens added in one run are all granted at nowUs with one lease, so they share one slot: added counts
-- them, in slot addedK at offset addedOffset (both set by the first).
local function newCounter(key, max, windowMs, n, lo, hi, expiresAt, nowUs)
  return {
    key = key, max = max, g = slotGeometry(windowMs),
    n = n, lo = lo, hi = hi, added = 0, addedK = false, addedOffset = false, dirty = false, swept = false,
    storedHi = hi, expiresAt = expiresAt, nowUs = nowUs, statsBase = false, bucket = false,
  }
end

-- The slot of a token granted at grantUs, and its release time as an offset (steps, rounded up) into that slot.
function slotOf(counter, grantUs, leaseMs)
  local releaseUs = grantUs + (counter.g.windowMs + leaseMs) * 1000
  local k = math.ceil(releaseUs / counter.g.slot)
  return k, math.ceil((releaseUs - (k - 1) * counter.g.slot) / counter.g.step)
end

local function releaseUsOf(counter, k, value)
  return (k - 1) * counter.g.slot + (value % counter.g.scale) * counter.g.step
end

-- Drops every slot released by now, keeping n in step.
function sweepCounter(counter, nowUs)
  counter.swept = true
  if counter.lo == nil then return end
  local key = counter.key
  local due = math.floor(nowUs / counter.g.slot)
  if counter.hi <= due then
    rcall('DEL', key)
    counter.n, counter.lo, counter.hi = 0, nil, nil
    return
  end
  local removed = {}
  local function drop(k, value)
    counter.n = counter.n - math.floor(value / counter.g.scale)
    removed[#removed + 1] = intArg(k)
  end
  if due >= counter.lo then
    local span = due - counter.lo + 1
    if span > WALK_LIMIT and span > rcall('HLEN', key) then
      local flat = rcall('HGETALL', key)
      for i = 1, #flat, 2 do
        local k = tonumber(flat[i])
        if k and k <= due then drop(k, tonumber(flat[i + 1])) end
      end
    else
      for k = counter.lo, due do
        local value = rcall('HGET', key, intArg(k))
        if value then drop(k, tonumber(value)) end
      end
    end
    counter.lo = due + 1
    counter.dirty = true
  end
  -- The slot now runs through may already be past its latest release time.
  local current = counter.lo <= due + 1 and rcall('HGET', key, intArg(due + 1))
  if current and releaseUsOf(counter, due + 1, tonumber(current)) <= nowUs then
    drop(due + 1, tonumber(current))
    counter.lo = due + 2
    counter.dirty = true
  end
  if #removed > 0 then rcall('HDEL', key, unpack(removed)) end
end

function loadCounter(key, max, windowMs, nowUs)
  local header = rcall('HGET', key, 'h')
  local n, lo, hi, x = 0, nil, nil, nil
  if header then
    n, lo, hi, x = string.match(header, '^(%d+) (%d+) (%d+) (%d+)$')
    n, lo, hi, x = tonumber(n), tonumber(lo), tonumber(hi), tonumber(x)
  end
  local counter = newCounter(key, max, windowMs, n, lo, hi, x, nowUs)
  local due = math.floor(nowUs / counter.g.slot)
  if counter.lo ~= nil and (counter.hi <= due or due - counter.lo >= SLOTS_PER_WINDOW) then sweepCounter(counter, nowUs) end
  return counter
end

-- True when `count` more tokens fit (a delivery that costs them); sweeps first when the stored count says no.
function hasRoomFor(counter, count)
  if counter.n + count <= counter.max then return true end
  if not counter.swept then sweepCounter(counter, counter.nowUs) end
  return counter.n + count <= counter.max
end

-- Counts `count` tokens granted now (a delivery's cost) as addToken does one: they share its slot.
function addTokens(counter, count, leaseMs)
  if count <= 0 then return end
  addToken(counter, leaseMs)
  counter.n = counter.n + count - 1
  counter.added = counter.added + count - 1
end

-- Counts one more token granted now (counter.nowUs) with lease leaseMs; every token a run adds to one
-- counter is granted at that moment with that lease.
function addToken(counter, leaseMs)
  counter.n = counter.n + 1
  if counter.added > 0 then
    counter.added = counter.added + 1
    return
  end
  local k, offset = slotOf(counter, counter.nowUs, leaseMs)
  counter.added, counter.addedK, counter.addedOffset = 1, k, offset
  if counter.lo == nil or k < counter.lo then counter.lo = k end
  if counter.hi == nil or k > counter.hi then counter.hi = k end
  counter.dirty = true
end

-- Counts `count` tokens released at releaseUs (a time of the counter's own choosing: deliveries another node
-- recorded, counted again after a failover). Written at once; a run that uses this adds no token otherwise.
function addTokensReleasedAt(counter, releaseUs, count)
  if count <= 0 or releaseUs <= counter.nowUs then return end
  local k = math.ceil(releaseUs / counter.g.slot)
  local offset = math.ceil((releaseUs - (k - 1) * counter.g.slot) / counter.g.step)
  local field = intArg(k)
  local value = tonumber(rcall('HGET', counter.key, field)) or 0
  if value % counter.g.scale > offset then offset = value % counter.g.scale end
  rcall('HSET', counter.key, field, intArg((math.floor(value / counter.g.scale) + count) * counter.g.scale + offset))
  counter.n = counter.n + count
  if counter.lo == nil or k < counter.lo then counter.lo = k end
  if counter.hi == nil or k > counter.hi then counter.hi = k end
  counter.dirty = true
end

-- The stored and just-added slots as { k, count, releaseUs }, earliest first.
function slotsInOrder(counter)
  local slots = {}
  local flat = rcall('HGETALL', counter.key)
  for i = 1, #flat, 2 do
    local k = tonumber(flat[i])
    if k then
      local value = tonumber(flat[i + 1])
      slots[k] = { count = math.floor(value / counter.g.scale), releaseUs = releaseUsOf(counter, k, value) }
    end
  end
  if counter.added > 0 then
    local k = counter.addedK
    local releaseUs = (k - 1) * counter.g.slot + counter.addedOffset * counter.g.step
    local slot = slots[k]
    if slot == nil then
      slots[k] = { count = counter.added, releaseUs = releaseUs }
    else
      slot.count = slot.count + counter.added
      if releaseUs > slot.releaseUs then slot.releaseUs = releaseUs end
    end
  end
  local order = {}
  for k, slot in pairs(slots) do order[#order + 1] = { k = k, count = slot.count, releaseUs = slot.releaseUs } end
  table.sort(order, function(a, b) return a.k < b.k end)
  return order
end

-- The tokens of slot k and their release time (us), this run's added ones included.
local function slotAt(counter, k)
  local value = tonumber(rcall('HGET', counter.key, intArg(k))) or 0
  local count, offset = math.floor(value / counter.g.scale), value % counter.g.scale
  if counter.added > 0 and k == counter.addedK then
    count = count + counter.added
    if counter.addedOffset > offset then offset = counter.addedOffset end
  end
  return count, (k - 1) * counter.g.slot + offset * counter.g.step
end

-- The earliest time (us) at which the counter holds at most max - count tokens (count: 1 unless given, a
-- delivery's cost), given what is counted now. A full counter takes no more tokens within a script, so its
-- answer for one token is worked out once per script (kept here, not in the counter, which has no field to spare).
-- A counter at its limit is asked this by every delivery call that meets it: the slots are read one by one from
-- the lowest that may hold tokens, which under a steady load holds the first release (one HGET), and the whole
-- hash (up to (W + h) / slot + 4 fields, sorted) only when the first ROOM_WALK_LIMIT slots do not release enough.
local roomAtUsOf = {}
local ROOM_WALK_LIMIT = 8
function roomAtUs(counter, count)
  count = count or 1
  if hasRoomFor(counter, count) then return 0 end
  local excess = counter.n - counter.max + count
  if excess <= 0 then return 0 end
  local known = count == 1 and roomAtUsOf[counter]
  if known then return known end
  local at = counter.hi * counter.g.slot
  local released, found = 0, false
  local last = math.min(counter.hi, counter.lo + ROOM_WALK_LIMIT - 1)
  for k = counter.lo, last do
    local tokens, releaseUs = slotAt(counter, k)
    released = released + tokens
    if released >= excess then
      at, found = releaseUs, true
      break
    end
  end
  if not found and last < counter.hi then
    -- On past the slots walked, with what they released.
    for _, slot in ipairs(slotsInOrder(counter)) do
      if slot.k > last then
        released = released + slot.count
        if released >= excess then
          at = slot.releaseUs
          break
        end
      end
    end
  end
  if count == 1 then roomAtUsOf[counter] = at end
  return at
end

-- Stops counting up to `count` tokens granted at grantUs; how many were still counted (and now are not).
function removeTokens(counter, grantUs, leaseMs, nowUs, count)
  local k = slotOf(counter, grantUs, leaseMs)
  local field = intArg(k)
  local value = tonumber(rcall('HGET', counter.key, field))
  if value == nil or value < counter.g.scale or releaseUsOf(counter, k, value) <= nowUs then return 0 end
  local held = math.floor(value / counter.g.scale)
  local removed = math.min(count, held)
  if removed >= held then
    rcall('HDEL', counter.key, field)
  else
    rcall('HSET', counter.key, field, intArg(value - removed * counter.g.scale))
  end
  counter.n = counter.n - removed
  counter.dirty = true
  return removed
end

function saveCounter(counter)
  if not counter.dirty then return end
  local key = counter.key
  if counter.statsBase and counter.n >= counter.max and counter.added > 0 then
    -- Just filled: note it in the throttle's :full index; room returns no sooner than its earliest slot's
    -- start. (Swept first, so that what is written below is the swept count.)
    if not counter.swept then sweepCounter(counter, counter.nowUs) end
    if counter.n >= counter.max then
      bucketIndexes.note(counter.statsBase, ':full', counter.bucket, math.floor((counter.lo - 1) * counter.g.slot / 1000))
    end
  end
  if counter.n <= 0 then
    rcall('DEL', key)
    return
  end
  local expire = counter.expiresAt == nil or counter.hi > counter.expiresAt
  -- The key expires when its last slot is released: a bucket with nothing in its window holds no key.
  if expire then counter.expiresAt = counter.hi + EXPIRY_SLACK end
  local header = string.format('%d %d %d %d', counter.n, counter.lo, counter.hi, counter.expiresAt)
  if counter.added > 0 then
    local k, scale = counter.addedK, counter.g.scale
    local field = intArg(k)
    -- Past the highest stored slot there is nothing to merge with.
    local value = 0
    if counter.storedHi ~= nil and k <= counter.storedHi then value = tonumber(rcall('HGET', key, field)) or 0 end
    local offset = value % scale
    if counter.addedOffset > offset then offset = counter.addedOffset end
    rcall('HSET', key, 'h', header, field, intArg((math.floor(value / scale) + counter.added) * scale + offset))
  else
    rcall('HSET', key, 'h', header)
  end
  if expire then rcall('PEXPIREAT', key, intArg(math.ceil(counter.expiresAt * counter.g.slot / 1000))) end
  if counter.statsBase and counter.hi ~= counter.storedHi then
    -- When its last counted token is released (written per throttle in one ZADD by bucketIndexes.flush).
    bucketIndexes.note(counter.statsBase, ':active', counter.bucket, math.ceil(counter.hi * counter.g.slot / 1000))
  end

end
end -- of the block that keeps the helpers local
