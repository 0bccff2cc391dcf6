"""Network (profile aws only): a VPC for the DAX status cache, with a way out for the functions.

DAX answers only inside a VPC, so both functions join it. Three subnet tiers per AZ:
- public: a NAT gateway per AZ (and the internet gateway it uses); nothing there gets a public
  address by itself (the NAT gateways' are Elastic IPs);
- functions (private, with egress): the Lambdas' ENIs and the interface endpoints. The NAT is
  their way to the internet (customers' HTTPS endpoints for HTTP jobs) and to the AWS APIs
  without an endpoint here (lambda:Invoke for Lambda targets, CloudWatch GetMetricData for the
  operator view);
- private (isolated, no route out): the DAX nodes, which only the functions' security group reaches.
With a customer's jobs package, a fourth: `jobcode` (private, with egress), the jobs function's alone.
Its route tables hold the NAT and nothing else, so a private route an operator adds to the functions'
tables for `corral:http_private_hosts` (peering, Transit Gateway, VPN) never reaches customer code,
and its network ACL refuses private addresses (RFC 1918, CGNAT) but the interface endpoints'
subnets (docs/decisions/egress.md "Customer code's own subnets").
DynamoDB stays on a gateway endpoint (free), SQS and Scheduler on interface endpoints, so the
per-job traffic never pays NAT data processing. docs/decisions/production-stack.md has
the cost comparison (NAT per AZ vs one NAT vs endpoints).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import ArnFormat, CfnOutput, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import acknowledgements

MAX_AZS = 2  # an environment-agnostic stack sees two AZs; pin the stack's env for three
# One NAT per AZ: a single one would make every HTTP/Lambda-target job, in both AZs, depend on one AZ.
NAT_GATEWAYS = MAX_AZS
SUBNET_TYPE = ec2.SubnetType.PRIVATE_WITH_EGRESS  # where the functions run
# Isolated: DAX needs no route out (it reaches DynamoDB on its own side). Named, sized and listed first
# as the stack's only subnets were before the NAT, so a deployed stack keeps these subnets (same
# logical ids and CIDRs) and its DAX nodes stay where they are.
CACHE_SUBNET_GROUP = "private"
FUNCTIONS_SUBNET_GROUP = "functions"
PUBLIC_SUBNET_GROUP = "public"
# The jobs function's own tier (customer code), listed last so the other tiers keep their CIDRs.
CUSTOMER_CODE_SUBNET_GROUP = "jobcode"
# What customer code may not reach but through the endpoints' subnets: the private ranges a peered VPC,
# a Transit Gateway or a VPN would use (as the worker's HTTP address checks, shared/targets/http_policy.py).
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
# Interface endpoints for the AWS APIs the functions call on every job besides DynamoDB (a gateway
# endpoint): they keep that traffic off the NAT's per-GB charge.
INTERFACE_ENDPOINTS = {
    "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
    "Scheduler": ec2.InterfaceVpcEndpointAwsService("scheduler"),  # the API creates schedules
}


class Network(Construct):
    def __init__(self, scope: Construct, id: str, *, customer_code: bool = False) -> None:
        """`customer_code`: the stack runs a customer's jobs package, and the jobs function gets its own tier."""
        super().__init__(scope, id)
        tiers = [
            ec2.SubnetConfiguration(name=CACHE_SUBNET_GROUP, subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22),
            ec2.SubnetConfiguration(name=FUNCTIONS_SUBNET_GROUP, subnet_type=SUBNET_TYPE, cidr_mask=22),
            ec2.SubnetConfiguration(
                name=PUBLIC_SUBNET_GROUP,
                subnet_type=ec2.SubnetType.PUBLIC,
                cidr_mask=26,
                map_public_ip_on_launch=False,
            ),
        ]
        if customer_code:
            tiers.append(
                ec2.SubnetConfiguration(name=CUSTOMER_CODE_SUBNET_GROUP, subnet_type=SUBNET_TYPE, cidr_mask=22)
            )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=MAX_AZS,
            nat_gateways=NAT_GATEWAYS,
            subnet_configuration=tiers,
            gateway_endpoints={
                "DynamoDb": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB,
                    # Not the jobs function's tier: its route tables hold the NAT and nothing else.
                    subnets=[
                        ec2.SubnetSelection(subnet_group_name=name)
                        for name in (CACHE_SUBNET_GROUP, FUNCTIONS_SUBNET_GROUP, PUBLIC_SUBNET_GROUP)
                    ],
                )
            },
        )
        self._flow_log()
        # Every HTTP job leaves from one of these addresses: what a customer's firewall allowlists.
        nat_addresses = [cast(ec2.CfnEIP, subnet.node.find_child("EIP")) for subnet in self.vpc.public_subnets]
        self.nat_gateway_ids = tuple(
            cast(ec2.CfnNatGateway, subnet.node.find_child("NATGateway")).ref for subnet in self.vpc.public_subnets
        )
        CfnOutput(
            scope,
            "EgressIps",
            value=Fn.join(",", [address.ref for address in nat_addresses]),
            description="Public IPs the functions' outbound requests (HTTP jobs) come from",
        )
        self.subnets = ec2.SubnetSelection(subnet_group_name=FUNCTIONS_SUBNET_GROUP)
        self.customer_code_subnets = (
            ec2.SubnetSelection(subnet_group_name=CUSTOMER_CODE_SUBNET_GROUP) if customer_code else self.subnets
        )
        self.cache_subnet_group = CACHE_SUBNET_GROUP
        self.functions_security_group = ec2.SecurityGroup(
            self,
            "Functions",
            vpc=self.vpc,
            description="corral functions: out to DAX, the VPC endpoints and, through the NAT, the internet",
            allow_all_outbound=True,
        )
        self.interface_endpoints: list[ec2.InterfaceVpcEndpoint] = []
        for name, service in INTERFACE_ENDPOINTS.items():
            endpoint = self.vpc.add_interface_endpoint(
                name, service=service, subnets=self.subnets, private_dns_enabled=True, open=False
            )
            # HTTPS from the functions only, rather than from the whole VPC CIDR.
            endpoint.connections.allow_default_port_from(self.functions_security_group)
            self.interface_endpoints.append(endpoint)
        if customer_code:
            self._fence_customer_code_subnets()

    def _flow_log(self) -> None:
        """Rejected traffic only: it is what explains a function that cannot reach its cache or queue, at a
        fraction of the log volume of ALL. Delivered with a role only VPC Flow Logs, for a flow log of this
        account, may assume (confused-deputy guard)."""
        stack = Stack.of(self)
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        flow_log_arns = stack.format_arn(
            service="ec2", resource="vpc-flow-log", resource_name="*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
        )
        role = iam.Role(
            self,
            "FlowLogRole",
            assumed_by=iam.ServicePrincipal(
                "vpc-flow-logs.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": flow_log_arns},
                },
            ),
            description="VPC Flow Logs writes the corral VPC's rejected traffic to its log group",
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs, role),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )

    def _fence_customer_code_subnets(self) -> None:
        """The jobs function's subnets: out to the interface endpoints (HTTPS) and the internet, never to a
        private address elsewhere. A network ACL is stateless, so the answers are allowed back the same way."""
        acl = ec2.NetworkAcl(
            self,
            "CustomerCodeAcl",
            vpc=self.vpc,
            subnet_selection=ec2.SubnetSelection(subnet_group_name=CUSTOMER_CODE_SUBNET_GROUP),
        )
        acknowledgements.customer_code_acl(acl)
        endpoint_subnets = self.vpc.select_subnets(subnet_group_name=FUNCTIONS_SUBNET_GROUP).subnets
        for number, subnet in enumerate(endpoint_subnets, start=100):
            cidr = ec2.AclCidr.ipv4(subnet.ipv4_cidr_block)
            acl.add_entry(
                f"ToEndpoints{number}",
                cidr=cidr,
                rule_number=number,
                traffic=ec2.AclTraffic.tcp_port(443),
                direction=ec2.TrafficDirection.EGRESS,
            )
            acl.add_entry(
                f"FromEndpoints{number}",
                cidr=cidr,
                rule_number=number,
                traffic=ec2.AclTraffic.tcp_port_range(1024, 65535),
                direction=ec2.TrafficDirection.INGRESS,
            )
        for number, private in enumerate(PRIVATE_RANGES, start=200):
            for direction in (ec2.TrafficDirection.EGRESS, ec2.TrafficDirection.INGRESS):
                acl.add_entry(
                    f"NoPrivate{direction.name.title()}{number}",
                    cidr=ec2.AclCidr.ipv4(private),
                    rule_number=number,
                    traffic=ec2.AclTraffic.all_traffic(),
                    direction=direction,
                    rule_action=ec2.Action.DENY,
                )
        # The internet, through the NAT (its answers come back from the internet's addresses; nothing
        # listens on a Lambda network interface, and the security group admits nothing unasked).
        for direction in (ec2.TrafficDirection.EGRESS, ec2.TrafficDirection.INGRESS):
            acl.add_entry(
                f"Internet{direction.name.title()}",
                cidr=ec2.AclCidr.any_ipv4(),
                rule_number=300,
                traffic=ec2.AclTraffic.all_traffic(),
                direction=direction,
            )

    def customer_code_security_group(self, scope: Construct) -> ec2.SecurityGroup:
        """The jobs function's group: out to anywhere (through the NAT, so a customer's job leaves from the
        stack's `EgressIps` as it did from the worker), and in to nothing of corral's but the interface
        endpoints (with private DNS on, an AWS call the customer's code makes to SQS or Scheduler resolves
        to them; what it may do there is its role's, which holds nothing). Not admitted to DAX."""
        group = ec2.SecurityGroup(
            scope,
            "SecurityGroup",
            vpc=self.vpc,
            description="corral jobs function (customer code): out through the NAT; no way in to DAX",
            allow_all_outbound=True,
        )
        for endpoint in self.interface_endpoints:
            endpoint.connections.allow_default_port_from(group)
        return group
