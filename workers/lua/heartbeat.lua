-- Record a consumer's heartbeat in its group's registry and list the live members, or,
-- when they are the ones the caller last read, only say so (a poll that finds nothing
-- changed costs a reply of constant size, whatever the group's size: docs/rebalance.md).
-- KEYS[1]: the registry sorted set (ls:registry:<group>:<topic>), member = consumer id,
--          score = time of the last heartbeat (ms, Redis clock)
-- ARGV[1]: consumer id ('' to only list)
-- ARGV[2]: heartbeat timeout in ms: members silent for longer are removed
-- ARGV[3]: the digest of the member list the caller read last ('' or absent: none)
-- Returns: {now_ms, digest} when the live members' digest is ARGV[3];
--          else {now_ms, digest, member, member, ...}, the live members in sorted order.
--          digest: SHA-1 of the sorted members, each as <length>:<id>
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
end
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
local parts = {}
for i, m in ipairs(members) do parts[i] = #m .. ':' .. m end
local digest = redis.sha1hex(table.concat(parts))
if digest == (ARGV[3] or '') then
  return {now, digest}
end
local out = {now, digest}
for _, m in ipairs(members) do out[#out + 1] = m end
return out
