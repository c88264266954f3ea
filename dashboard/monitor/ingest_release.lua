-- Give up an ingester's lease, only when the caller still holds it (an expired lease
-- another ingester took since is left alone).
-- KEYS[1]: the lease string (see ingest_lease.lua)
-- ARGV[1]: the caller's ingester id
-- Returns: 1 when released, 0 when the caller did not hold it (nothing changed).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
