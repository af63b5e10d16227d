--[[
  Publishes each throttle's effective limits (shared by every queue that uses the throttle), as the live
  declarations add up to them. Limits are replaced whole, so a raised or lowered N applies from the next
  grant. Limits worked out from an older registry version than a throttle's stay as they are (a worker that
  read the registry before another registered must not undo that worker's declarations).
  Every key is in the throttle namespace's slot.

  Input:
    KEYS[1..]  one limits key (HASH window ms -> N, d: the declared windows "W:N,...", and v: the registry
               version) per throttle; the window fields are the declared ones, or those of an override set at
               run time (<throttle base>:overrides, includes/limitOverrides)
    ARGV[1] limits time to live (ms)   ARGV[2] the registry version they were worked out from
    ARGV[3] '1' to publish even so (the registry's version went back: its keys were lost or deleted)
    ARGV[4..]  per throttle (in KEYS order): count of fields, then field, value pairs: window ms -> N,
               and for a rate r -> "n perMs burst" and rh -> H, the longest lease (ms) of a worker in
               leased delivery declaring it, or start deadline an exact worker keeps on it (src/worker/
               queueConfig.ts, includes/rateCounter), and for a concurrency c -> n
               (includes/inFlightCounter)

  A throttle paused (<throttle base>:paused exists, includes/throttlePauses) keeps its limits' field p.
  A lease shorter than the one published stays the longer one (rh) until every token leased with that
  could be spent: rl is the shorter one, applied by the first publication from rd (ms, this node's clock) on.

  Output: the number of throttles whose limits were written
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/limitOverrides"

local nowMs = math.floor(nowUs() / 1000)
local version = tonumber(ARGV[2])
local force = ARGV[3] == '1'
local at, written = 4, 0
for k = 1, #KEYS do
  local count = tonumber(ARGV[at])
  if force or tonumber(rcall('HGET', KEYS[k], 'v') or 0) <= version then
    local old = rcall('HMGET', KEYS[k], 'rh', 'rd')
    rcall('DEL', KEYS[k])
    local lease
    local declared, declaredText = {}, {}
    for i = 1, count do
      local field, value = ARGV[at + 2 * i - 1], ARGV[at + 2 * i]
      if field == 'rh' then
        lease = tonumber(value)
      elseif tonumber(field) then
        declared[tonumber(field)] = tonumber(value)
        declaredText[#declaredText + 1] = field .. ':' .. value
      else
        rcall('HSET', KEYS[k], field, value)
      end
    end
    -- The declared windows (d), and what is counted: those, or an override set at run time (includes/limitOverrides).
    local base = string.sub(KEYS[k], 1, -string.len(':limits') - 1)
    rcall('HSET', KEYS[k], 'd', table.concat(declaredText, ','))
    writeWindowLimits(KEYS[k], base .. ':overrides', declared, nowMs)
    if lease then
      local oldLease, due = tonumber(old[1]) or 0, tonumber(old[2])
      if lease < oldLease and (due == nil or nowMs < due) then
        -- A lease of oldLease may have been granted just now: its tokens can be spent until then (and a margin).
        rcall('HSET', KEYS[k], 'rh', oldLease, 'rl', lease, 'rd', due or (nowMs + oldLease + 100))
      else
        rcall('HSET', KEYS[k], 'rh', lease)
      end
    end
    -- A pause outlives the limits' rewrites (includes/throttlePauses).
    if rcall('EXISTS', base .. ':paused') == 1 then rcall('HSET', KEYS[k], 'p', '1') end
    rcall('HSET', KEYS[k], 'v', version)
    rcall('PEXPIRE', KEYS[k], tonumber(ARGV[1]))
    written = written + 1
  end
  at = at + 1 + 2 * count
end
return written
