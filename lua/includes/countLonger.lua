--[[
  Moves a started job's tokens in one window counter to the later release a longer lease gives them
  (lua/countLateStart-n.lua says why that keeps the window exact; lua/countLateLeased-1.lua does the same for a
  leased grant). Tokens no longer counted (released, or given back) are counted again until the later release:
  they count at least as long as they must.
  Needs includes/windowCounter (and what it needs).
]]

-- true when the tokens were still counted where the shorter lease put them.
local function countTokensLonger(counter, grantUs, fromLeaseMs, toLeaseMs, nowUs, count)
  local moved = removeTokens(counter, grantUs, fromLeaseMs, nowUs, count) > 0
  addTokensReleasedAt(counter, grantUs + (counter.g.windowMs + toLeaseMs) * 1000, count)
  return moved
end
