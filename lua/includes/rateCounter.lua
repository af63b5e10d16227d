--[[
  The rate of one bucket (a throttle's rate(n, per, { burst })), as a generic cell rate: one STRING
    <throttle base>:b:<bucket>:r   the bucket's theoretical arrival time, TAT (us, this node's clock),
                                   expiring then (an idle bucket holds no key)
  With T = per / n (the emission interval) and tolerance tau = (burst - 1) * T - H, c tokens can be granted
  at now when max(TAT, now) + c * T - now <= tau + T, and their grant moves TAT to max(TAT, now) + c * T.
  Nothing refills in the background: the state is read when a grant needs it (lazy refill).

  Invariant: in any window of length t, at most burst + n * t / per granted tokens are spent, when each is
  spent within H of its grant (H: the longest lease of a worker that declares the throttle in leased
  delivery, or the start deadline an exact worker keeps on the rate, published with the limits as rh:
  src/queueState/queueConfig.ts; 0 when every queue delivers exactly without one, spending as it grants).
  Why it holds: take the M tokens granted from the first (j) to the last (i) of those spent in [a, a + t).
  Each grant adds T to TAT, and TAT before j is at least g_j, so after i it is at least g_j + M * T; i was
  allowed, so that is at most g_i + tau + T. Since g_i <= s_i < a + t and g_j >= s_j - H >= a - H,
  M * T < t + H + tau + T = t + burst * T: M < burst + t / T. TAT is rounded up, only ever stricter.
  A lease shorter than before keeps the longer one until every token leased with it is spent or expired
  (lua/publishLimits-n.lua: rl and rd).
  A lease longer than the burst covers (tau < 0: an exact worker's start deadline on a rate whose burst
  covers less, src/declarations/validateLimits.ts' rateStartDeadlineMs) checks the unclamped TAT:
  a token fits when TAT - now <= tau, one a call, so grants are at least T + H - (burst - 1) * T apart. The
  proof above then ends one step earlier: TAT before i is at least g_j + (M - 1) * T and at most g_i + tau, so
  (M - 1) * T < t + H + tau and again M < burst + t / T. Only grants whose tokens are spent together (one
  job, or one Grantor delivery) may meet it: a leased pool's tokens are spent one by one, so leased delivery
  keeps tau >= 0 (src/declarations/validateLimits.ts' checkRateLease).
  A job's tokens (its cost c, granted and spent together) are checked alone against the stored TAT, clamped
  or not: a job fits when TAT + (c - 1) * T - tau <= now (rateRoomAtUs). The proof above holds for it with j
  before i (TAT before i is at least g_j + (M - c_i) * T, and the check bounds it by g_i + tau - (c_i - 1) * T,
  so again (M - 1) * T < t + H + tau); with j = i the tokens are one job's c <= burst (src/declarations/
  Cost.ts' costCapacity). So a costly job fits a bucket that has been idle long enough even when c is more
  than burst - H / T, and a start deadline does not shrink what one job may cost. Forgetting the TAT is safe
  once every job of cost up to burst fits by it: at TAT + H (saveRate). Tokens counted together for several
  jobs or a leased pool (rateRoom) are checked against the clamped TAT: each of them is a grant of its own.
  A token given back (never spent: returnTokens, returnLeasedTokens) stays counted here: TAT alone cannot say
  whether its T was absorbed by an idle moment since (then taking it off would let more through than the
  rate). So a return wastes a rate's allowance, never adds to it; window counters do take returns back.
  One exception (lua/returnTokens-n.lua): a job put back for starting late whose grant is still the bucket's
  latest (the stored TAT is the one its grant wrote: no grant came after, and every grant moves TAT) puts back
  the TAT its grant read. The bucket is then exactly as if that grant had never been made, and its tokens were never spent:
  the proof above holds for the grants left. Exact delivery's tickets carry both TATs (includes/exactRoom).
  A rate with a statsBase (and bucket: the counter's statsBase, bucket) keeps its throttle's indexes
  (includes/bucketIndexes): active until its key expires, full until room for one more returns.
  rateKind: the functions every kind has (includes/bucketCounters' header lists them); a bucket's rate is its
  counters.rate, a throttle's its limits.rate, read from the limits hash's r ("n perMs burst") and rh (H);
  rl and rd are lua/publishLimits-n.lua's, for shortening H. Its giveBack is the exception above, and takes
  the rate's key and the two TATs (a ticket's, includes/exactRoom), not the bucket's counters: it is asked
  for one grant long after it was made, of a rate not loaded (lua/returnTokens-n.lua).
  The including script defines rcall and includes intArg.
]]
--- @include "bucketIndexes"
local rateOf, loadRate, rateRoomAtUs, addRateTokens, saveRate, rateKind
do
-- "n perMs burst" granted with lease H (ms) -> { T, toleranceUs, fillMs, leaseMs }.
function rateOf(text, leaseMs)
  local n, perMs, burst = string.match(text, '^(%d+) (%d+) (%d+)$')
  local T = tonumber(perMs) * 1000 / tonumber(n)
  return { T = T, toleranceUs = (tonumber(burst) - 1) * T - leaseMs * 1000, fillMs = math.ceil(tonumber(burst) * T / 1000), leaseMs = leaseMs }
end

-- statsBase, bucket: the throttle's base and the bucket's segment, for its indexes (false: none kept).
function loadRate(key, rate, nowUs, statsBase, bucket)
  local tat = tonumber(rcall('GET', key)) or 0
  return { key = key, T = rate.T, tolerance = rate.toleranceUs, leaseMs = rate.leaseMs, tat = tat, nowUs = nowUs, dirty = false, statsBase = statsBase or false, bucket = bucket }
end

local function base(counter)
  if counter.tat > counter.nowUs then return counter.tat end
  return counter.nowUs
end

-- The TAT a grant is checked against: clamped to now, unless the lease outruns the burst (tau < 0).
local function checked(counter)
  if counter.tolerance < 0 then return counter.tat end
  return base(counter)
end

-- Tokens that could be granted now (at least one exactly when rateRoomAtUs says room is there now).
local function rateRoom(counter)
  local at = checked(counter) - counter.tolerance
  if at > counter.nowUs then return 0 end
  if counter.tolerance < 0 then return 1 end
  return 1 + math.floor((counter.nowUs - at) / counter.T)
end

-- When `count` more tokens (1 unless given: a delivery's cost, spent together) can be granted (us), 0 when
-- they can now. The unclamped TAT: the header says why one job's tokens may be checked against it.
function rateRoomAtUs(counter, count)
  local at = counter.tat + ((count or 1) - 1) * counter.T - counter.tolerance
  if at <= counter.nowUs then return 0 end
  return math.ceil(at)
end

function addRateTokens(counter, count)
  if count <= 0 then return end
  counter.tat = math.ceil(base(counter) + count * counter.T)
  counter.dirty = true
end

function saveRate(counter)
  if not counter.dirty then return end
  -- Until a job of cost burst fits by the TAT (the header): TAT + H, which is TAT - tau for a burst of 1.
  local keepUntil = counter.tat + counter.leaseMs * 1000
  if keepUntil <= counter.nowUs then
    rcall('DEL', counter.key)
  else
    local expiresMs = math.ceil(keepUntil / 1000)
    rcall('SET', counter.key, intArg(counter.tat), 'PXAT', intArg(expiresMs))
    if counter.statsBase then
      bucketIndexes.note(counter.statsBase, ':active', counter.bucket, expiresMs)
      local roomAt = rateRoomAtUs(counter)
      if roomAt > 0 then bucketIndexes.note(counter.statsBase, ':full', counter.bucket, math.ceil(roomAt / 1000)) end
    end
  end
end

-- The rate kind (includes/bucketCounters): a bucket's rate is its counters.rate, when its throttle has one.
-- Fields, not locals: the delivery scripts' main chunk is near Lua's 200 locals.
-- loaded: every rate loaded in this run, saved by save.
rateKind = { loaded = {} }

-- The rate's fields of the limits hash (true when the field is one): r and rh, kept as they are until
-- readDone; rl and rd (publication's, the shorter lease waiting to apply) are not read here.
function rateKind.readField(field, value, limits)
  if field == 'r' then
    limits.rateText = value
  elseif field == 'rh' then
    limits.rateLeaseMs = tonumber(value)
  elseif field ~= 'rl' and field ~= 'rd' then
    return false
  end
  return true
end

-- Every field read: the throttle's rate as limits.rate, and true, when it has one (r; a rate without rh is
-- granted with no lease).
function rateKind.readDone(limits)
  if not limits.rateText then return false end
  limits.rate = rateOf(limits.rateText, limits.rateLeaseMs or 0)
  limits.rateKeyTail = ':r'
  return true
end

-- Loads the bucket's rate into counters.rate (nothing when its throttle has none).
function rateKind.load(limits, bucket, nowUs, counters)
  if not limits.rate then return end
  local counter = loadRate(limits.base .. ':b:' .. bucket.bucket .. limits.rateKeyTail, limits.rate, nowUs, limits.base, bucket.bucket)
  counters.rate = counter
  rateKind.loaded[#rateKind.loaded + 1] = counter
end

-- The lower of room (nil: none yet) and the tokens the bucket's rate could grant now.
function rateKind.room(counters, room)
  local counter = counters.rate
  if not counter then return room end
  local left = rateRoom(counter)
  if room == nil or left < room then return left end
  return room
end

-- The later of at and when the rate can grant `cost` more, spent together (us).
function rateKind.roomAtUs(counters, cost, at)
  local counter = counters.rate
  if not counter then return at end
  local roomAt = rateRoomAtUs(counter, cost)
  if roomAt > at then return roomAt end
  return at
end

-- The later of at and when the rate could have granted `units` more, one after another (us): its room for them
-- together, which is exact for a rate (an estimate for a backlog, includes/deadlines).
rateKind.waitAtUs = rateKind.roomAtUs

-- Counts `count` tokens granted now in the bucket's rate.
function rateKind.add(counters, count)
  if counters.rate then addRateTokens(counters.rate, count) end
end

-- Writes every rate loaded in this run.
function rateKind.save()
  for _, counter in ipairs(rateKind.loaded) do saveRate(counter) end
end

-- The grant that moved the bucket's TAT (its key) from beforeUs to afterUs is undone while it is the latest
-- (the stored TAT is the one it wrote; the header says why that is safe): true when undone. The key keeps
-- its expiry, which the undone grant set later.
function rateKind.giveBack(key, beforeUs, afterUs)
  if tonumber(rcall('GET', key)) ~= afterUs then return false end
  rcall('SET', key, intArg(beforeUs), 'KEEPTTL')
  return true
end
-- A started job whose tokens the bucket granted with TAT moving to afterUs reached its processor byUs later than
-- the lease covers (lua/countLateStart-n.lua): the bucket goes on as if that grant, and every one since, had come
-- byUs later. Every grant after now sees a TAT byUs later (its proof's g_j moved by byUs); the grants before now
-- could not meet the start within one window unless byUs were near the window itself (that script's header).
-- The key is forgotten byUs later too (its TAT + H); a key already forgotten is written again when the moved TAT
-- is still ahead, until it plus toLeaseMs, which is no earlier than the grant's own TAT plus H would have been.
-- Returns whether it moved, and whether the bucket granted since (the stored TAT is past afterUs: those grants
-- saw the earlier TAT, and the header's proof does not cover them against this start; afterUs 0, a leased pool's
-- grant, cannot tell).
function rateKind.countLater(key, afterUs, byUs, toLeaseMs, nowUs)
  local stored = tonumber(rcall('GET', key))
  if stored then
    local ttl = rcall('PTTL', key)
    local tat = stored + byUs
    if ttl > 0 then
      rcall('SET', key, intArg(tat), 'PX', intArg(ttl + math.ceil(byUs / 1000)))
    else
      rcall('SET', key, intArg(tat), 'KEEPTTL')
    end
    return true, afterUs > 0 and stored > afterUs
  end
  local tat = afterUs + byUs
  if tat <= nowUs then return false, false end
  rcall('SET', key, intArg(tat), 'PXAT', intArg(math.ceil(tat / 1000) + toLeaseMs))
  return true, false
end
end -- of the block that keeps the helpers local
