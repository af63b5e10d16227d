--[[
  Limits set at run time (ThrottleAdmin.setLimits), kept in the namespace's slot:
    <throttle base>:overrides   HASH '*' (the whole throttle) or a bucket segment (one key: a plan tier) ->
                                "<until ms, 0: until cleared>|<W>:<N>,<W>:<N>..."; the key expires with its
                                latest finite override (none while one is open-ended)
  An override replaces the declared window limits while it lasts. The declared windows it leaves out are still
  counted, with no limit (UNBOUNDED), so that when it ends (cleared, expired) the declared limits find every
  delivery counted; and a window it adds is counted from when it is set. So a limit lowered at run time holds
  fully within W + h, as the design's Limit changes say, and one raised applies from the next grant.
  The whole throttle's override is written into its limits hash (writeWindowLimits: the windows' N), where
  every grant reads it; a key's override is read per bucket when the limits say some exist (field k).
  The including script defines rcall.
]]
local UNBOUNDED_LIMIT, activeOverride, mergedWindows, writeWindowLimits
do
UNBOUNDED_LIMIT = 1000000000000000

-- An override's windows as { [W] = N } while it lasts at nowMs, else nil.
function activeOverride(text, nowMs)
  if not text then return nil end
  local untilText, rest = string.match(text, '^(%d+)|(.*)$')
  if not untilText then return nil end
  local untilMs = tonumber(untilText)
  if untilMs ~= 0 and untilMs <= nowMs then return nil end
  local windows = {}
  for w, n in string.gmatch(rest, '(%d+):(%d+)') do windows[tonumber(w)] = tonumber(n) end
  return windows
end

-- The windows to count: the override's with its N, and the declared ones it leaves out, unbounded; or the
-- declared ones as they are. declared: { [W] = N }. Returns { [W] = N }.
function mergedWindows(declared, override)
  if not override then return declared end
  local merged = {}
  for w in pairs(declared) do merged[w] = UNBOUNDED_LIMIT end
  for w, n in pairs(override) do merged[w] = n end
  return merged
end

-- Rewrites the window fields of a limits hash: the declared windows, or those merged with the whole
-- throttle's override. Sets field k while some key has an override of its own.
function writeWindowLimits(limitsKey, overridesKey, declared, nowMs)
  local flat = rcall('HGETALL', limitsKey)
  for i = 1, #flat, 2 do
    if tonumber(flat[i]) then rcall('HDEL', limitsKey, flat[i]) end
  end
  local whole = rcall('HGET', overridesKey, '*')
  local override = activeOverride(whole, nowMs)
  for w, n in pairs(mergedWindows(declared, override)) do
    rcall('HSET', limitsKey, w, string.format('%d', n))
  end
  -- When the whole throttle's override lapses (ou, ms; 0: until cleared), the declared windows (d) apply at once.
  if override then rcall('HSET', limitsKey, 'ou', string.match(whole, '^(%d+)|')) else rcall('HDEL', limitsKey, 'ou') end
  local count = rcall('HLEN', overridesKey)
  if count > 1 or (count == 1 and rcall('HEXISTS', overridesKey, '*') == 0) then
    rcall('HSET', limitsKey, 'k', '1')
  else
    rcall('HDEL', limitsKey, 'k')
  end
end
end -- of the block that keeps the helpers local
