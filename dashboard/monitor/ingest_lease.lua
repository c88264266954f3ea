-- Take or renew an ingester's lease (a stream's, or the publisher's): granted when the
-- lease is free or already the caller's; its expiry is then set ARGV[2] ms from now.
-- KEYS[1]: the lease string (lockstep-web:ingest:lease:<stream> or
--          lockstep-web:ingest:publisher), value = the holder's ingester id
-- ARGV[1]: the caller's ingester id
-- ARGV[2]: the lease's time to live in ms
-- Returns: 1 when the caller holds the lease now, 0 when another ingester holds it.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
