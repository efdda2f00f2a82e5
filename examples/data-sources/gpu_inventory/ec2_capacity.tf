# H100 capacity: the account's reservations and Capacity Blocks, and the
# two-day blocks of 2 instances EC2 offers to sell in my zones within the
# next 30 days, cheapest first.
data "gpu_inventory" "h100_capacity" {
  source = "ec2"

  filter {
    gpu_products       = ["H100"]
    availability_zones = ["us-east-1a", "us-east-1b"]
  }

  capacity {
    reservations   = true
    offerings      = true
    instance_count = 2
    duration_hours = 48
    start_after    = plantimestamp()
    end_before     = timeadd(plantimestamp(), "720h")
    sort           = "price"
  }
}

output "blocks_i_hold" {
  description = "Active or scheduled Capacity Blocks, with when each ends: what gpu_node_group can target."
  value = [for r in data.gpu_inventory.h100_capacity.capacity_reservations :
    { id = r.id, zone = r.availability_zone, instances = r.total_instances, ends = r.end_date }
    if r.reservation_type == "capacity-block" && contains(["active", "scheduled"], r.state)
  ]
}

output "cheapest_offering" {
  description = "The cheapest block on offer: its ID goes to aws_ec2_capacity_block_reservation."
  value       = try(data.gpu_inventory.h100_capacity.capacity_block_offerings[0], null)
}
