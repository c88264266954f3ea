-- Grant or renew the lock of one queue for one consumer of a group.
-- KEYS[1]: the lock hash (ls:{topic:queue}:lock:<group>), fields owner, token,
--          expires_at, granted_at, renewed_at (ms, Redis clock)
-- ARGV[1]: consumer id asking
-- ARGV[2]: lock time-to-live in ms
-- ARGV[3]: '1' to renew only (optional): refuse instead of granting when the caller does
--          not hold a live lock, so a consumer finishing a queue it is handing over keeps
--          its lock alive but can never re-take one it has already released
-- Returns: {token, granted} where token 0 means refused (held by another live owner),
--          granted 1 means a new grant (new fencing token: re-read the offset),
--          granted 0 means a renewal of the caller's current grant.
-- An expired lock is re-granted with a new token even to its last owner: whoever held it
-- may have lost it meanwhile, so the caller must start again from the stored offset.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = redis.call('HGET', KEYS[1], 'owner')
local expires = tonumber(redis.call('HGET', KEYS[1], 'expires_at') or '0')
local ttl = tonumber(ARGV[2])
if owner == ARGV[1] and expires > now then
  redis.call('HSET', KEYS[1], 'expires_at', now + ttl, 'renewed_at', now)
  return {tonumber(redis.call('HGET', KEYS[1], 'token')), 0}
end
if ARGV[3] == '1' then
  return {0, 0}
end
if owner and owner ~= '' and expires > now then
  return {0, 0}
end
local token = redis.call('HINCRBY', KEYS[1], 'token', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'expires_at', now + ttl,
  'granted_at', now, 'renewed_at', now)
return {token, 1}
