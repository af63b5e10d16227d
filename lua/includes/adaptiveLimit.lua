--[[
  An adaptive limit (Throttle.adaptive): the live value of one limit of a throttle (its rate's n, or one
  window's N), per bucket, lowered when the API answers 429 and raised back with time. Kept in the namespace's
  slot: the limits hash's field
    a                              "<target> <min> <ceiling> <decrease> <increase> <periodMs>", target r (the
                                   rate) or the window's W (ms) (src/declarations/Adaptive.ts' adaptiveField)
  and, per bucket lowered,
    <throttle base>:b:<bucket>:a   STRING "<live>|<sinceMs>": the live limit its latest decrease set, at sinceMs
                                   (this node's clock); it expires once raised back to the ceiling
    <throttle base>:adapted        ZSET bucket segment -> when (ms) it is back at its ceiling: the buckets
                                   lowered now, for throttleStats
  The live limit at nowMs is min(ceiling, live + increase * floor((nowMs - sinceMs) / periodMs)): each whole
  period without a decrease adds increase, worked out when read (nothing is written to raise it); no key,
  the ceiling. A decrease (lua/adaptLimit-3.lua) sets it to floor(live at nowMs * decrease), at least min, at
  most once a period: the 429s within a period of a decrease answer deliveries granted before it.

  Invariant: every grant is held to the live limit at its moment. A window counts each delivery whatever its
  N (includes/windowCounter), so a grant sees every delivery of the last W and goes only when they and it fit
  the N in force; a lowered N holds fully once the deliveries granted at the higher one have left the window,
  as a limit set at run time does (includes/limitOverrides). A rate's n sets the emission interval of the
  grants that follow (its TAT keeps what the earlier ones moved it to: includes/rateCounter's proof holds with
  the highest n in force over the span looked at); its burst stays as declared. A limit of a key override set
  at run time is capped by the live value too: adapting only ever lowers.
  The including script defines rcall and includes rateCounter (rateOf) and windowKind.
]]
local adaptiveLimit = {}
do
-- Field a -> { target ('r' or W), min, ceiling, decrease, increase, periodMs }.
function adaptiveLimit.parse(text)
  local target, min, ceiling, decrease, increase, periodMs = string.match(text, '^(%w+) (%d+) (%d+) (%S+) (%d+) (%d+)$')
  if not target then return nil end
  return {
    target = target, min = tonumber(min), ceiling = tonumber(ceiling), decrease = tonumber(decrease),
    increase = tonumber(increase), periodMs = tonumber(periodMs),
  }
end

function adaptiveLimit.key(throttleBase, bucket)
  return throttleBase .. ':b:' .. bucket .. ':a'
end

-- The live limit at nowMs from a bucket's stored "<live>|<sinceMs>" (nil: none kept, the ceiling), and sinceMs
-- (nil with none).
function adaptiveLimit.live(spec, stored, nowMs)
  if not stored then return spec.ceiling, nil end
  local live, sinceMs = string.match(stored, '^(%d+)|(%d+)$')
  if not live then return spec.ceiling, nil end
  sinceMs = tonumber(sinceMs)
  local steps = math.floor(math.max(0, nowMs - sinceMs) / spec.periodMs)
  return math.max(spec.min, math.min(spec.ceiling, tonumber(live) + spec.increase * steps)), sinceMs
end

-- A decrease at nowMs of the bucket's limit kept at key: returns the live limit before and after, whether it
-- changed (false within a period of the last decrease), and when it was last lowered (nil: never kept).
function adaptiveLimit.decrease(spec, key, nowMs)
  local before, sinceMs = adaptiveLimit.live(spec, rcall('GET', key), nowMs)
  if sinceMs and nowMs - sinceMs < spec.periodMs then return before, before, false, sinceMs end
  local after = math.max(spec.min, math.floor(before * spec.decrease))
  -- Kept until raised back to the ceiling (and a period more: the step that reaches it).
  local steps = math.ceil((spec.ceiling - after) / spec.increase) + 1
  rcall('SET', key, after .. '|' .. nowMs, 'PX', steps * spec.periodMs)
  return before, after, true, nowMs
end

-- Notes a bucket lowered to `after` at nowMs in the throttle's index of lowered buckets (a ZSET, segment -> the
-- ms it is back at its ceiling by), dropping those back already; the index lasts as long as its latest entry.
function adaptiveLimit.noteLowered(spec, indexKey, segment, after, nowMs)
  local backAtMs = nowMs + math.ceil((spec.ceiling - after) / spec.increase) * spec.periodMs
  rcall('ZREMRANGEBYSCORE', indexKey, '-inf', nowMs)
  rcall('ZADD', indexKey, backAtMs, segment)
  local latest = rcall('ZRANGE', indexKey, -1, -1, 'WITHSCORES')
  rcall('PEXPIREAT', indexKey, tonumber(latest[2]))
end

-- The bucket's limits with the adapted one at its live value (a copy: limits is the throttle's, shared by its
-- buckets). limits.adaptive is the parsed field a; nowUs the run's clock.
function adaptiveLimit.applied(limits, bucket, nowUs)
  local spec = limits.adaptive
  local live = (adaptiveLimit.live(spec, rcall('GET', adaptiveLimit.key(limits.base, bucket.bucket)), math.floor(nowUs / 1000)))
  if live >= spec.ceiling then return limits end
  local own = {}
  for name, value in pairs(limits) do
    if type(name) ~= 'number' then own[name] = value end
  end
  for i, limit in ipairs(limits) do
    if spec.target ~= 'r' and limit.windowMs == tonumber(spec.target) and limit.max > live then
      own[i] = { windowMs = limit.windowMs, max = live, keyHead = limit.keyHead, keyTail = limit.keyTail }
    else
      own[i] = limit
    end
  end
  if spec.target == 'r' and limits.rateText then
    local n, rest = string.match(limits.rateText, '^(%d+) (.*)$')
    if tonumber(n) > live then own.rate = rateOf(live .. ' ' .. rest, limits.rateLeaseMs or 0) end
  end
  return own
end
end -- of the block that keeps the helpers local
