--[[
  Keeps a HASH of timed entries (pauses, limit overrides) for as long as its longest entry: it expires at the
  latest end among them, and lives on while one is open-ended (ends at 0). untilOf(value) reads an entry's
  end (ms, 0: open-ended). The including script defines rcall.
]]
local function expireWithLatest(key, untilOf)
  local latest = 0
  local flat = rcall('HGETALL', key)
  if #flat == 0 then return end
  for i = 2, #flat, 2 do
    local untilMs = untilOf(flat[i])
    if untilMs == 0 then
      rcall('PERSIST', key)
      return
    end
    if untilMs > latest then latest = untilMs end
  end
  rcall('PEXPIREAT', key, latest)
end
