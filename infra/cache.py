"""Status cache (profile aws only): a DAX cluster in front of the jobs table.

The functions find it through FunctionEnv.dax_endpoint (its TLS discovery URL); the client
side lives in shared/aws/status_cache.py.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_dax as dax
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import table_access
from infra.network import Network
from infra.store import JobStore
from shared import settings
from shared.settings import ResourceNames

DAX_TLS_PORT = 9111


class StatusCache(Construct):
    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, network: Network, store: JobStore) -> None:
        super().__init__(scope, id)
        # DAX reads and writes the table with this role, on the callers' behalf.
        self.cluster_name = names.dax_cluster
        self.role = iam.Role(
            self,
            "Role",
            # Only DAX acting for this account. DAX documents no source keys for the roles it assumes, and a
            # condition on a key a service does not send would refuse DAX the table, so the guard holds
            # when the key is there (IfExists); without it, only a cluster created in this account can use
            # the role, since creating one takes iam:PassRole on it (docs/decisions/least-privilege.md).
            assumed_by=iam.ServicePrincipal(
                "dax.amazonaws.com",
                conditions={"StringEqualsIfExists": {"aws:SourceAccount": Stack.of(self).account}},
            ),
            description="DAX -> jobs table",
        )
        table_access.grant_dax_role(self.role, store)
        self.security_group = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=network.vpc, description="corral DAX cluster", allow_all_outbound=False
        )
        self.security_group.add_ingress_rule(
            network.functions_security_group, ec2.Port.tcp(DAX_TLS_PORT), "corral functions -> DAX (TLS)"
        )
        subnet_group = dax.CfnSubnetGroup(
            self,
            "Subnets",
            subnet_group_name=f"{names.dax_cluster}-subnets",
            subnet_ids=network.vpc.select_subnets(subnet_group_name=network.cache_subnet_group).subnet_ids,
            description="corral status cache",
        )
        self.cluster = dax.CfnCluster(
            self,
            "Cluster",
            # A fixed name and create-only properties (node type, role, subnet group, encryption): changing
            # one is a replacement, which CloudFormation refuses for a named resource. docs/deploy.md
            # "Changing the DAX node type" deploys a second cluster beside it instead.
            cluster_name=self.cluster_name,
            node_type=settings.DAX_NODE_TYPE,
            replication_factor=settings.DAX_NODES,
            iam_role_arn=self.role.role_arn,
            subnet_group_name=subnet_group.ref,
            security_group_ids=[self.security_group.security_group_id],
            sse_specification=dax.CfnCluster.SSESpecificationProperty(sse_enabled=True),
            cluster_endpoint_encryption_type="TLS",
            description="corral job-status cache",
        )
        # The role's policy must exist before DAX first uses the role (the Ref/GetAtt order only the role).
        self.cluster.node.add_dependency(self.role.node.find_child("DefaultPolicy"))

    @property
    def endpoint_url(self) -> str:
        """daxs://<cluster discovery endpoint>:9111, what amazon-dax-client takes as endpoint_url."""
        return self.cluster.attr_cluster_discovery_endpoint_url

    def grant_data_access(self, function: lambda_.IFunction) -> None:
        """The item calls the status path makes through DAX (job items; the cluster's role holds it to them)."""
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(table_access.DAX_FUNCTION_ACTIONS), resources=[self.cluster.attr_arn])
        )
