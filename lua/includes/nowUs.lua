--[[
  The Redis server's clock, in microseconds. Every throttle decision reads this clock and no other,
  so that processes whose clocks disagree still share one timeline.
]]
local function nowUs()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
